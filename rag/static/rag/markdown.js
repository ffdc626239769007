/* A small markdown renderer for text that comes from user content (answers, sources).
 * Safety first: the whole text is HTML-escaped before any tag is added back, and links are only
 * made for http(s) URLs, so a source can never inject markup or script into the page.
 * knowhubMarkdown(text, {citeHref: (n) => url|null}) -> HTML string
 * knowhubPlain(text) -> the text without markdown syntax (for one-line snippets and titles)
 */
(function () {
  "use strict";
  const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");

  function inline(s, opts) {
    const codes = [];
    s = s.replace(/`([^`]+)`/g, (_, c) => { codes.push(c); return "\u0000" + (codes.length - 1) + "\u0000"; });
    s = s.replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>");
    s = s.replace(/(^|[^*\w])\*([^*\s][^*]*?)\*(?!\w)/g, "$1<em>$2</em>");
    s = s.replace(/\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)/g, '<a href="$2" target="_blank" rel="noopener noreferrer">$1</a>');
    if (opts && opts.citeHref) {
      s = s.replace(/\[(\d{1,2})\]/g, (m, n) => {
        const href = opts.citeHref(+n);
        return href ? `<sup><a class="cite" data-n="${n}" href="${esc(href)}">[${n}]</a></sup>` : `<sup class="cite-gone" title="This source is no longer available to you">[${n}]</sup>`;
      });
    }
    return s.replace(/\u0000(\d+)\u0000/g, (_, i) => "<code>" + codes[+i] + "</code>");
  }

  function markdown(text, opts) {
    const lines = esc(text || "").split("\n");
    const out = [];
    let para = [], list = null, code = null, quote = [];
    const flushPara = () => { if (para.length) { out.push("<p>" + para.map((l) => inline(l, opts)).join("<br>") + "</p>"); para = []; } };
    const flushList = () => { if (list) { out.push(`<${list.tag}>` + list.items.map((i) => "<li>" + inline(i, opts) + "</li>").join("") + `</${list.tag}>`); list = null; } };
    const flushQuote = () => { if (quote.length) { out.push("<blockquote>" + quote.map((l) => inline(l, opts)).join("<br>") + "</blockquote>"); quote = []; } };
    const flushAll = () => { flushPara(); flushList(); flushQuote(); };
    for (const line of lines) {
      if (code !== null) {
        if (/^\s*```/.test(line)) { out.push("<pre><code>" + code.join("\n") + "</code></pre>"); code = null; } else code.push(line);
        continue;
      }
      let m;
      if (/^\s*```/.test(line)) { flushAll(); code = []; }
      else if ((m = line.match(/^(#{1,6})\s+(.*)$/))) { flushAll(); const h = Math.min(m[1].length + 2, 6); out.push(`<h${h}>` + inline(m[2], opts) + `</h${h}>`); }
      else if ((m = line.match(/^\s*&gt;\s?(.*)$/))) { flushPara(); flushList(); quote.push(m[1]); }
      else if ((m = line.match(/^\s*[-*+]\s+(.*)$/)) || (m = line.match(/^\s*\d+[.)]\s+(.*)$/))) {
        flushPara(); flushQuote(); const tag = /^\s*\d/.test(line) ? "ol" : "ul";
        if (!list || list.tag !== tag) { flushList(); list = { tag, items: [] }; }
        list.items.push(m[1]);
      }
      else if (!line.trim()) { flushAll(); }
      else { flushList(); flushQuote(); para.push(line); }
    }
    if (code !== null) out.push("<pre><code>" + code.join("\n") + "</code></pre>");
    flushAll();
    return out.join("");
  }

  function plain(text) {
    return String(text || "")
      .replace(/```[\s\S]*?```/g, " ")
      .replace(/\[([^\]]+)\]\([^)]*\)/g, "$1")
      .replace(/\[\[([^\]]+)\]\]/g, "$1")
      .replace(/^\s{0,3}(#{1,6}|[-*+]|\d+[.)]|>)\s+/gm, "")
      .replace(/(\*\*|__|`)/g, "")
      .replace(/\s+/g, " ")
      .trim();
  }

  window.knowhubMarkdown = markdown;
  window.knowhubPlain = plain;
  window.knowhubEscape = esc;
})();
