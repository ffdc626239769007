(function () {
  "use strict";
  const root = document.getElementById("session");
  const form = document.getElementById("composer");
  if (!root || !form) return;
  const id = root.dataset.id;
  const chat = document.getElementById("chat");
  const input = document.getElementById("message");
  const send = document.getElementById("send");
  const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  const phases = ["entities", "rules", "misconceptions", "tests", "done"];

  // Mirrors the session_text filter: blank lines outside ``` fences start a new bubble,
  // fenced code becomes a code block that keeps its lines.
  function splitParts(text) {
    const parts = [[]];
    const fence = /```[\w-]*\n([\s\S]*?)\n?```/g;
    let pos = 0, m;
    function addText(chunk) {
      chunk.split(/\n\s*\n/).forEach(function (piece, i) {
        if (i > 0 && parts[parts.length - 1].length) parts.push([]);
        piece = piece.replace(/^\n+|\n+$/g, "");
        if (piece.trim()) parts[parts.length - 1].push({code: false, text: piece});
      });
    }
    while ((m = fence.exec(text)) !== null) {
      addText(text.slice(pos, m.index));
      parts[parts.length - 1].push({code: true, text: m[1]});
      pos = fence.lastIndex;
    }
    addText(text.slice(pos));
    return parts.filter(function (p) { return p.length; });
  }
  function renderParts(turn, text) {
    turn.querySelectorAll(".bubble").forEach(function (b) { b.remove(); });
    const cites = turn.querySelector(".cites");
    for (const part of splitParts(text)) {
      const div = document.createElement("div");
      div.className = "bubble assistant";
      for (const seg of part) {
        if (seg.code) {
          const pre = document.createElement("pre"); pre.className = "code";
          const code = document.createElement("code"); code.textContent = seg.text;
          pre.appendChild(code); div.appendChild(pre);
        } else {
          const span = document.createElement("span"); span.className = "text"; span.textContent = seg.text;
          div.appendChild(span);
        }
      }
      turn.insertBefore(div, cites);
    }
  }
  function scrollToEnd() {
    // The page is the only scroller: bring the end of the conversation (newest message, then
    // the composer) to the bottom of the viewport; the legend stays below for whoever scrolls.
    const section = form.parentElement;
    const end = section.getBoundingClientRect().bottom + window.scrollY;
    window.scrollTo(0, Math.max(0, end - window.innerHeight));
  }
  function bubble(role, text) {
    const turn = document.createElement("div");
    turn.className = "turn " + role;
    const div = document.createElement("div");
    div.className = "bubble " + role;
    div.textContent = text;
    turn.appendChild(div);
    chat.appendChild(turn);
    scrollToEnd();
    return turn;
  }
  function showCitations(div, cites) {
    if (!cites || !cites.length) return;
    const box = document.createElement("div");
    box.className = "cites";
    for (const c of cites) {
      const line = document.createElement("div");
      line.append("[" + c.n + "] ");
      if (c.url) { const a = document.createElement("a"); a.href = c.url; a.textContent = c.title; line.append(a); }
      else { line.append(c.title); }
      box.appendChild(line);
    }
    div.appendChild(box);
  }
  function update(session) {
    const p = session.progress;
    root.dataset.phase = p.phase;
    document.getElementById("progress-text").textContent =
      p.entities_mapped + "/" + p.entities_total + " mapped · " + p.tests_answered + "/" + p.tests_total + " answered";
    document.querySelectorAll("#phases li").forEach(function (li) {
      const i = phases.indexOf(li.dataset.phase);
      li.className = i < p.phase_index ? "past" : (i === p.phase_index ? "current" : "");
    });
    const body = document.getElementById("legend");
    body.textContent = "";
    if (!session.legend.length) {
      body.innerHTML = '<tr class="empty-row"><td class="empty" colspan="2">Map an idea to see it here.</td></tr>';
    }
    for (const row of session.legend) {
      const tr = document.createElement("tr");
      const s = document.createElement("td"); s.className = "sym"; s.textContent = row.symbol;
      const e = document.createElement("td"); e.textContent = row.entity;
      tr.append(s, e); body.appendChild(tr);
    }
    if (p.phase === "done") {
      document.getElementById("finish").classList.add("ready");
      document.getElementById("finish-hint").textContent = "All steps done — collect your artifact.";
    }
  }

  async function submit(ev) {
    ev.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    input.value = "";
    input.disabled = send.disabled = true;
    bubble("user", text);
    const reply = bubble("assistant pending", "");
    const live = reply.querySelector(".bubble");
    try {
      const res = await fetch("/sessions/" + id + "/chat/stream", {
        method: "POST",
        headers: {"Content-Type": "application/json", "X-CSRFToken": csrf, "Accept": "text/event-stream"},
        credentials: "same-origin",
        body: JSON.stringify({message: text}),
      });
      if (!res.ok) {
        let detail = "The guide could not answer (" + res.status + ").";
        try { const body = await res.json(); detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail); } catch (e) {}
        throw new Error(detail);
      }
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, {stream: true});
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const line = frame.split("\n").find(function (l) { return l.startsWith("data: "); });
          if (!line) continue;
          const item = JSON.parse(line.slice(6));
          if (item.type === "delta") { live.textContent += item.text; }
          else if (item.type === "replace") { live.textContent = item.text; }
          else if (item.type === "done") {
            reply.classList.remove("pending");
            showCitations(reply, item.event.data.citations);
            renderParts(reply, item.event.content);
            update(item.session);
          } else if (item.type === "error") { throw new Error(item.detail); }
          scrollToEnd();
        }
      }
    } catch (err) {
      reply.classList.add("error");
      reply.textContent = "";
      const div = document.createElement("div");
      div.className = "bubble assistant error";
      div.textContent = "⚠ " + err.message;
      reply.appendChild(div);
    } finally {
      reply.classList.remove("pending");
      reply.querySelectorAll(".pending").forEach(function (b) { b.classList.remove("pending"); });
      input.disabled = send.disabled = false;
      input.focus();
    }
  }
  form.addEventListener("submit", submit);
  input.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); form.requestSubmit(); }
  });
  document.getElementById("finish-form").addEventListener("submit", function (ev) {
    if (root.dataset.phase !== "done" && !confirm("Finish now? Steps you haven't done stay empty.")) ev.preventDefault();
  });
  scrollToEnd();
})();
