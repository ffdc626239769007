(() => {
  "use strict";
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const form = document.getElementById("ask-form");
  const askBtn = document.getElementById("ask-btn");
  const stopBtn = document.getElementById("stop-btn");
  const thread = document.getElementById("thread");
  const questionBox = document.getElementById("question");
  const convList = document.getElementById("conv-list");
  const historyBox = document.getElementById("history-box");
  const esc = window.knowhubEscape, markdown = window.knowhubMarkdown, plain = window.knowhubPlain;
  let conversationId = JSON.parse(document.getElementById("initial-conversation").textContent) || null;
  let controller = null, turnSeq = 0;
  const THUMB_UP = '<svg viewBox="0 0 24 24" width="15" height="15" aria-hidden="true"><path fill="currentColor" d="M2 21h4V9H2v12zm20-11a2 2 0 0 0-2-2h-6.3l1-4.6v-.3c0-.4-.2-.8-.4-1.1L13.2 1 6.6 7.6C6.2 8 6 8.5 6 9v10a2 2 0 0 0 2 2h9c.8 0 1.5-.5 1.8-1.2l3-7.1c.1-.2.2-.5.2-.7v-2z"/></svg>';
  const THUMB_DOWN = THUMB_UP.replace('aria-hidden="true"', 'aria-hidden="true" style="transform:rotate(180deg)"');
  document.querySelectorAll("#turn-tpl").forEach((t) => {
    const [up, down] = t.content.querySelectorAll(".thumbs button");
    up.innerHTML = THUMB_UP; down.innerHTML = THUMB_DOWN;
  });
  const wide = window.matchMedia("(min-width: 761px)");
  historyBox.open = wide.matches;

  const docHref = (uid) => `/documents/${encodeURIComponent(uid)}/#cited`;
  const ORIGINAL = /^(https?:\/\/|logseq:\/\/|notion:\/\/)\S+$|^\/ingest\/files\/[0-9a-f]{64}$/i;
  function originalLabel(url) {
    if (/^\/ingest\/files\//.test(url)) return "Original file";
    if (/^logseq:/i.test(url)) return "Open in Logseq";
    if (/^notion:/i.test(url) || /notion\.so\//i.test(url)) return "Open in Notion";
    return "Original";
  }

  // -- requests ----------------------------------------------------------------------------------
  function post(url, body, keepalive) {
    return fetch(url, { method: "POST", credentials: "same-origin", keepalive: !!keepalive,
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf }, body: JSON.stringify(body) })
      .catch(() => null);
  }
  function api(method, url, body) {
    const init = { method, credentials: "same-origin", headers: { "Accept": "application/json", "X-CSRFToken": csrf } };
    if (body !== undefined) { init.headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
    return fetch(url, init);
  }

  // Errors as sentences a person can act on, never raw JSON.
  const FIELD_NAMES = { query: "The question", date_to: "The end date", date_from: "The start date", collections: "Collections", model: "The model", title: "The title" };
  function humanError(status, body) {
    if (status === 401 || status === 403) return "You are logged out. Log in again, then ask once more.";
    if (status === 404) return "That was not found: it may have been deleted.";
    if (status === 413) return "The question is too long.";
    if (status >= 500) return "Something went wrong on the server. Please try again in a moment.";
    const detail = body && body.detail;
    if (typeof detail === "string" && detail) return detail;
    if (detail && typeof detail === "object") {
      const parts = [];
      for (const [field, msgs] of Object.entries(detail)) {
        for (const msg of [].concat(msgs)) {
          const text = typeof msg === "string" ? msg : "is not valid";
          if (text === "Unknown field.") parts.push(`This server does not understand “${field}” yet.`);
          else if (field === "non_field_errors" || /^[A-Z]/.test(text)) parts.push(text);
          else parts.push(`${FIELD_NAMES[field] || field}: ${text}`);
        }
      }
      if (parts.length) return parts.join(" ");
    }
    return "The question could not be asked. Please try again.";
  }

  // -- history list ------------------------------------------------------------------------------
  async function loadHistory() {
    let rows = [];
    try { const r = await api("GET", "/rag/conversations"); if (r.ok) rows = await r.json(); } catch (e) { return; }
    convList.innerHTML = "";
    document.getElementById("conv-empty").hidden = rows.length > 0;
    for (const c of rows) {
      const li = document.createElement("li");
      li.dataset.id = c.id;
      if (c.id === conversationId) li.classList.add("current");
      li.innerHTML = `<a class="conv-link" href="/?c=${encodeURIComponent(c.id)}" title="${esc(c.title)}">${esc(c.title)}</a>` +
        `<button type="button" class="rename" title="Rename" aria-label="Rename">✎</button><button type="button" class="delete" title="Delete" aria-label="Delete">✕</button>`;
      li.querySelector(".rename").addEventListener("click", () => startRename(li, c));
      li.querySelector(".delete").addEventListener("click", () => removeConversation(c));
      convList.appendChild(li);
    }
  }
  function startRename(li, c) {
    const link = li.querySelector(".conv-link");
    const input = document.createElement("input");
    input.value = c.title; input.maxLength = 200; input.setAttribute("aria-label", "New title");
    link.replaceWith(input); input.focus(); input.select();
    let done = false;
    const finish = async (save) => {
      if (done) return; done = true;
      const title = input.value.trim();
      if (save && title && title !== c.title) {
        const r = await api("PATCH", `/rag/conversations/${encodeURIComponent(c.id)}`, { title });
        if (!r.ok) { let b = null; try { b = await r.json(); } catch (e) { /* empty */ } alert(humanError(r.status, b)); }
      }
      loadHistory();
    };
    input.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); finish(true); } else if (e.key === "Escape") finish(false); });
    input.addEventListener("blur", () => finish(true));
  }
  async function removeConversation(c) {
    if (!window.confirm(`Delete the conversation “${c.title}”?`)) return;
    const r = await api("DELETE", `/rag/conversations/${encodeURIComponent(c.id)}`);
    if (!r.ok && r.status !== 404) { alert("The conversation could not be deleted. Please try again."); return; }
    if (c.id === conversationId) newConversation();
    loadHistory();
  }
  function newConversation() {
    if (controller) controller.abort();
    conversationId = null; thread.innerHTML = "";
    history.replaceState(null, "", "/");
    const missing = document.getElementById("conv-missing"); if (missing) missing.remove();
    convList.querySelectorAll("li").forEach((li) => li.classList.remove("current"));
    questionBox.focus();
  }
  function setConversation(id) {
    if (!id || id === conversationId && new URLSearchParams(location.search).get("c") === id) return;
    conversationId = id;
    history.replaceState(null, "", `/?c=${encodeURIComponent(id)}`);
  }

  // -- one turn ----------------------------------------------------------------------------------
  function setStatus(turn, text, busy) {
    turn.querySelector(".status").innerHTML = (busy ? '<span class="spinner"></span>' : "") + esc(text);
  }
  function newTurn(query) {
    const turn = document.getElementById("turn-tpl").content.firstElementChild.cloneNode(true);
    const state = { turnId: ++turnSeq, query, text: "", sources: [], cited: new Set(), interactionId: null, fallback: null, chips: null, searched: null, strategy: null, ignored: [], judgments: {} };
    turn.querySelector(".question").textContent = query;
    thread.appendChild(turn);  // oldest first: the new turn goes below
    return { turn, state };
  }
  function citeHref(state) {
    return (n) => { const s = state.sources.find((x) => x.n === n); return s ? docHref(s.chunk_uid) : null; };
  }
  function renderAnswer(turn, state) {
    turn.querySelector(".answer").innerHTML = markdown(state.text, { citeHref: citeHref(state) });
    turn.querySelectorAll(".answer a.cite").forEach((a) => a.addEventListener("click", () => {
      const s = state.sources.find((x) => x.n === +a.dataset.n);
      if (s && state.interactionId) post("/rag/feedback/click", { interaction_id: state.interactionId, chunk_uid: s.chunk_uid, rank: s.n }, true);
    }));
  }

  function renderSearched(turn, state) {
    const el = turn.querySelector(".searched");
    const q = (state.searched || "").trim();
    if (!q && (state.strategy === "REUSE" || state.strategy === "NO_RAG")) {
      // Nothing was searched: the answer reads the sources of the turn before.
      el.hidden = false;
      el.textContent = "No new search: the sources of the last answer were read again.";
    } else if (q && q.toLowerCase() !== state.query.trim().toLowerCase()) {
      el.hidden = false;
      el.innerHTML = `Searched for: <q>${esc(q)}</q>`;
    } else el.hidden = true;
  }

  const ORIGIN = { guessed: "guessed from your words", stated: "you asked for it", form: "set in the filters below" };
  const EFFECT = { filter: "only matching sources are searched", boost: "matching sources are ranked higher", dropped: "not applied: it matched nothing you can see" };
  const WIDENED = "nothing under this filter answered, so everything was searched";
  const ORIGIN_WORD = { stated: "you said", guessed: "guessed", form: "filter" };
  function renderChips(turn, state) {
    const box = turn.querySelector(".chips");
    box.innerHTML = "";
    const chips = Array.isArray(state.chips) ? state.chips : [];
    box.hidden = chips.length === 0;
    for (const chip of chips) {
      const span = document.createElement("span");
      const origin = ORIGIN[chip.origin] ? chip.origin : "guessed";
      span.className = `chip origin-${origin} effect-${esc(chip.effect || "filter")}${chip.widened ? " widened" : ""}`;
      const label = chip.label || `${chip.field}: ${chip.value}`;
      const why = `${ORIGIN[origin]}${chip.phrase ? ` (“${chip.phrase}”)` : ""} · ${chip.widened ? WIDENED : EFFECT[chip.effect] || ""}`;
      span.title = why;
      span.dataset.field = chip.field; span.dataset.value = chip.value; span.dataset.origin = origin;
      // A boost narrows nothing: say so on the chip itself, not only in its tooltip.
      const word = `${ORIGIN_WORD[origin]}${chip.effect === "boost" ? " · ranks higher" : ""}`;
      span.innerHTML = `<span class="chip-origin">${word}</span><span class="chip-label">${esc(label)}</span>`;
      if (origin === "form") {
        const x = document.createElement("button");
        x.type = "button"; x.className = "chip-x"; x.textContent = "×";
        x.title = `Ask again without “${label}” (clears it in the filters)`; x.setAttribute("aria-label", x.title);
        x.addEventListener("click", () => {
          if (controller) return;
          clearFormFilter(chip.field, chip.value);
          ask(state.query);
        });
        span.appendChild(x);
      } else if (chip.effect !== "dropped") {
        const x = document.createElement("button");
        x.type = "button"; x.className = "chip-x"; x.textContent = "×";
        x.title = `Ask again without “${label}”`; x.setAttribute("aria-label", x.title);
        x.addEventListener("click", () => {
          if (controller) return;
          ask(state.query, { ignore: [...state.ignored, { field: chip.field, value: chip.value }] });
        });
        span.appendChild(x);
      }
      box.appendChild(span);
    }
  }

  function renderSources(turn, state) {
    const section = turn.querySelector(".sources");
    const ol = section.querySelector("ol");
    ol.innerHTML = "";
    section.querySelector(".more-sources")?.remove();
    if (!state.sources.length) { section.hidden = true; return; }
    section.hidden = false;
    // Once the answer cites some sources, the ones it did not quote fold away under one line:
    // they were searched, not used, and listed first they read like the answer's evidence.
    let more = null;
    if (state.cited.size && state.sources.some((s) => !state.cited.has(s.n))) {
      more = document.createElement("details");
      more.className = "more-sources";
      const uncited = state.sources.filter((s) => !state.cited.has(s.n)).length;
      more.innerHTML = `<summary>${uncited} more found, not quoted</summary><ol></ol>`;
      section.appendChild(more);
    }
    for (const s of [...state.sources].sort((a, b) => a.n - b.n)) {  // in the order the answer numbers them
      const li = document.createElement("li");
      li.id = `src-${state.turnId}-${s.n}`;
      li.dataset.chunkUid = s.chunk_uid;
      if (state.cited.has(s.n)) li.classList.add("cited");
      const title = esc(plain(s.title) || s.source_id || s.chunk_uid);
      // The breadcrumb starts with the title: show only what it adds ("p. 4"), not the title twice.
      const crumbs = plain(s.breadcrumb || ""), named = plain(s.title || "");
      const where = crumbs === named ? "" : crumbs.startsWith(`${named} > `) ? crumbs.slice(named.length + 3) : crumbs;
      const crumb = where ? ` <span class="muted">· ${esc(where)}</span>` : "";
      const ocr = s.ocr ? ' <span class="badge ocr-badge" title="Read from a scanned page by OCR">text read by OCR</span>' : "";
      // The agenda item of this meeting the question is about: why it was chosen, in its own words.
      const agenda = s.agenda ? ` <span class="agenda" title="The part of this meeting your question is about">on “${esc(s.agenda)}”</span>` : "";
      const original = s.url && ORIGINAL.test(s.url) ? ` <a class="orig-link" href="${esc(s.url)}" target="_blank" rel="noopener noreferrer">${originalLabel(s.url)} ↗</a>` : "";
      li.innerHTML = `<span class="n">[${s.n}]</span><div class="body"><a class="src-link" href="${esc(docHref(s.chunk_uid))}">${title}</a>${crumb}${agenda} <span class="badge">${esc(s.collection_label || s.collection)}</span>${ocr}${original}<div class="snippet">${esc(plain(s.snippet || s.content).slice(0, 300))}</div></div>` +
        `<span class="date">${s.date ? esc(s.date) : ""}</span>` +
        `<span class="thumbs"><button type="button" data-label="positive" title="Relevant source" aria-label="Relevant source">${THUMB_UP}</button><button type="button" data-label="negative" title="Not relevant" aria-label="Not relevant">${THUMB_DOWN}</button></span>`;
      li.querySelectorAll("a.src-link, a.orig-link").forEach((a) => a.addEventListener("click", () => {
        if (state.interactionId) post("/rag/feedback/click", { interaction_id: state.interactionId, chunk_uid: s.chunk_uid, rank: s.n }, true);
      }));
      const judged = state.judgments[s.chunk_uid];
      li.querySelectorAll(".thumbs button").forEach((b) => b.classList.toggle("on", !!judged && b.dataset.label === judged));
      li.querySelectorAll(".thumbs button").forEach((b) => b.addEventListener("click", () => {
        if (!state.interactionId) return;
        state.judgments[s.chunk_uid] = b.dataset.label;
        li.querySelectorAll(".thumbs button").forEach((x) => x.classList.toggle("on", x === b));
        post("/rag/feedback", { interaction_id: state.interactionId, outcome: 0, judgments: [{ chunk_uid: s.chunk_uid, label: b.dataset.label }] });
      }));
      (more && !state.cited.has(s.n) ? more.querySelector("ol") : ol).appendChild(li);
    }
  }

  const FALLBACK = { names: "The name in your question matched nothing, so all sources were searched.", tags: "The topic tag matched nothing, so all sources were searched." };
  function finishMeta(turn, state, done) {
    const meta = turn.querySelector(".meta");
    meta.hidden = false;
    const badges = [];
    const extractive = done.extractive || done.model === "extractive";
    if (extractive) badges.push('<span class="badge extractive" title="No AI model is configured: the answer quotes the most relevant sentences of your sources">Quoted from your sources (no AI model)</span>');
    const fb = done.fallback || state.fallback;
    if (fb) badges.push(`<span class="badge" title="${esc(FALLBACK[fb] || "A filter matched nothing, so it was left out.")}">searched more widely</span>`);
    meta.querySelector(".badges").innerHTML = badges.join("");
    const cost = typeof done.cost_usd === "number" && done.cost_usd > 0 ? `$${done.cost_usd.toFixed(done.cost_usd < 0.01 ? 4 : 2)}` : "";
    meta.querySelector(".figures").textContent = [extractive ? "" : done.model, done.tokens ? `${done.tokens} tokens` : "", cost, done.latency_ms ? `${(done.latency_ms / 1000).toFixed(1)} s` : ""].filter(Boolean).join(" · ");
    meta.querySelectorAll(".thumbs button").forEach((b) => {
      if (done.outcome != null && +b.dataset.outcome === done.outcome) b.classList.add("on");
      b.addEventListener("click", () => {
        if (!state.interactionId) return;
        meta.querySelectorAll(".thumbs button").forEach((x) => x.classList.toggle("on", x === b));
        post("/rag/feedback", { interaction_id: state.interactionId, outcome: +b.dataset.outcome });
      });
    });
  }

  function showError(turn, message, detail) {
    const box = turn.querySelector(".error-box");
    box.hidden = false;
    box.textContent = message;
    if (detail) box.title = detail;
    turn.querySelector(".answer").classList.add("failed");
  }

  function takeAnalysis(turn, state, data) {
    if (data.strategy !== undefined) state.strategy = data.strategy;
    if (data.analysis_filters !== undefined) { state.chips = data.analysis_filters; renderChips(turn, state); }
    if (data.searched_query !== undefined) { state.searched = data.searched_query; renderSearched(turn, state); }
  }

  function handle(turn, state, type, data) {
    if (type === "status") {
      setStatus(turn, data.stage === "generating" ? "Writing the answer…" : data.stage === "reusing" ? "Looking again at the sources of the last answer…" : "Finding relevant information…", true);
    } else if (type === "sources") {
      state.sources = data.sources || [];
      state.fallback = data.fallback;
      if (data.conversation_id) setConversation(data.conversation_id);
      takeAnalysis(turn, state, data);
      renderSources(turn, state);
    } else if (type === "delta") {
      state.text += data.text;
      renderAnswer(turn, state);
    } else if (type === "citations") {
      state.cited = new Set((data.citations || []).map((c) => c.n));
      renderSources(turn, state);
    } else if (type === "error") {
      if (data.error === "GENERATION_FAILED") showError(turn, "The AI model could not answer this time. The sources found are listed below.", data.detail);
      else showError(turn, "Something went wrong while answering. Please try again.", data.detail);
    } else if (type === "done") {
      state.interactionId = data.interaction_id;
      if (data.conversation_id) setConversation(data.conversation_id);
      takeAnalysis(turn, state, data);
      setStatus(turn, "", false);
      finishMeta(turn, state, data);
      renderAnswer(turn, state);
    }
  }

  // A turn read back from the server (reload, history): the same rendering as a live one.
  function showStoredTurn(t) {
    const { turn, state } = newTurn(t.question);
    state.sources = t.sources || [];
    state.cited = new Set((t.citations || []).map((c) => c.n));
    state.interactionId = t.interaction_id;
    state.judgments = t.judgments || {};
    state.text = t.answer || "";
    takeAnalysis(turn, state, t);
    renderSources(turn, state);
    renderAnswer(turn, state);
    if (t.error) showError(turn, "The AI model could not answer this time. The sources found are listed below.");
    else if (t.stopped) setStatus(turn, "Stopped.", false);
    finishMeta(turn, state, { model: t.model, extractive: t.model === "extractive", outcome: t.outcome });
  }

  async function loadConversation(id) {
    const r = await api("GET", `/rag/conversations/${encodeURIComponent(id)}`);
    if (!r.ok) { conversationId = null; history.replaceState(null, "", "/"); return; }
    const data = await r.json();
    document.title = `${data.title} · knowhub`;
    data.turns.forEach(showStoredTurn);
    const last = thread.lastElementChild; if (last) last.scrollIntoView({ block: "start" });
  }

  async function ask(query, opts) {
    opts = opts || {};
    const fd = new FormData(form);
    const body = { query };
    const cols = fd.getAll("collections"); if (cols.length) body.collections = cols;
    for (const k of ["date_from", "date_to", "domain", "entity"]) { const v = fd.get(k); if (v) body[k] = v; }
    const person = fd.get("people"); if (person) body.people = [person];
    const model = fd.get("model"); if (model) body.model = model;
    if (conversationId) body.conversation_id = conversationId;
    if (opts.ignore && opts.ignore.length) body.ignore_filters = opts.ignore;
    if (window.knowhubFiles) Object.assign(body, window.knowhubFiles.askFields());  // attached files (files.js)

    const { turn, state } = newTurn(query);
    state.ignored = opts.ignore || [];
    if (state.ignored.length) turn.querySelector(".question").textContent = `${query}  (asked again without ${state.ignored.map((f) => f.value).join(", ")})`;
    setStatus(turn, "Finding relevant information…", true);
    turn.scrollIntoView({ block: "nearest" });
    controller = new AbortController();
    askBtn.disabled = true; stopBtn.disabled = false;
    try {
      const resp = await fetch("/rag/ask/stream", { method: "POST", credentials: "same-origin", signal: controller.signal,
        headers: { "Content-Type": "application/json", "Accept": "text/event-stream", "X-CSRFToken": csrf }, body: JSON.stringify(body) });
      if (!resp.ok) {
        let j = null;
        try { j = await resp.json(); } catch (e) { /* not JSON */ }
        showError(turn, humanError(resp.status, j));
        setStatus(turn, "", false);
        return;
      }
      const reader = resp.body.getReader();
      const decoder = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        let idx;
        while ((idx = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, idx); buf = buf.slice(idx + 2);
          let type = "message", data = "";
          for (const line of block.split("\n")) {
            if (line.startsWith("event:")) type = line.slice(6).trim();
            else if (line.startsWith("data:")) data += line.slice(5).trim();
          }
          if (data) handle(turn, state, type, JSON.parse(data));
        }
      }
      loadHistory();
    } catch (err) {
      if (err.name === "AbortError") {
        setStatus(turn, "Stopped.", false);
        turn.classList.add("stopped");
        setTimeout(loadHistory, 500);
      } else {
        showError(turn, "Could not reach knowhub. Check your connection and try again.", String(err));
        setStatus(turn, "", false);
      }
    } finally {
      askBtn.disabled = false; stopBtn.disabled = true; controller = null;
    }
  }

  // -- the filters panel: how many are set, shown while it is folded; one button clears them all --
  const filtersBox = form.querySelector("details.filters");
  const filtersCount = document.getElementById("filters-count");
  const clearFilters = document.getElementById("clear-filters");
  function formFilterCount() {
    const fd = new FormData(form);
    let n = fd.getAll("collections").length;
    for (const k of ["date_from", "date_to", "domain", "entity", "people"]) if (fd.get(k)) n += 1;
    return n;
  }
  function updateFilterCount() {
    const n = formFilterCount();
    filtersCount.textContent = n ? ` (${n} set)` : "";
    clearFilters.hidden = n === 0;
  }
  function clearFormFilter(field, value) {
    if (field === "collections") form.querySelectorAll('input[name="collections"]').forEach((c) => { if (c.value === value) c.checked = false; });
    else if (field === "date") { form.elements.date_from.value = ""; form.elements.date_to.value = ""; }
    else if (form.elements[field]) form.elements[field].value = "";
    updateFilterCount();
  }
  if (filtersBox && filtersCount && clearFilters) {
    form.addEventListener("change", updateFilterCount);
    form.addEventListener("input", updateFilterCount);
    clearFilters.addEventListener("click", () => {
      form.querySelectorAll('input[name="collections"]').forEach((c) => { c.checked = false; });
      for (const k of ["date_from", "date_to", "domain", "entity", "people"]) if (form.elements[k]) form.elements[k].value = "";
      updateFilterCount();
    });
    updateFilterCount();
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const q = questionBox.value.trim();
    if (q && !controller) { questionBox.value = ""; ask(q); }
  });
  questionBox.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
  });
  stopBtn.addEventListener("click", () => { if (controller) controller.abort(); });
  document.getElementById("new-conv").addEventListener("click", newConversation);

  loadHistory();
  if (conversationId) loadConversation(conversationId);
})();
