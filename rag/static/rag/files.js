// A person's own files on the ask page: attach (button or drag-and-drop), chips that restrict the
// next questions to those files until removed, and "Your files" with delete. REST: /ingest/my-files.
// ask.js asks window.knowhubFiles.askFields() for the restriction when it sends a question.
(() => {
  "use strict";
  const root = document.getElementById("my-files");
  if (!root) return;
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const input = document.getElementById("attach-input");
  const chipsBox = document.getElementById("attached-chips");
  const status = document.getElementById("attach-status");
  const list = document.getElementById("your-files-list");
  const overlay = document.getElementById("drop-overlay");
  const KEY = "knowhub.attached";
  let files = [];
  // Attached files survive a reload of the page (this tab only) until removed.
  let attached = new Set(JSON.parse(sessionStorage.getItem(KEY) || "[]"));

  const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  const size = (n) => (n >= 1048576 ? `${(n / 1048576).toFixed(1)} MB` : `${Math.max(1, Math.round(n / 1024))} KB`);
  const save = () => sessionStorage.setItem(KEY, JSON.stringify([...attached]));

  function say(text, isError) {
    status.textContent = text;
    status.classList.toggle("error", !!isError);
  }

  function renderChips() {
    chipsBox.innerHTML = "";
    for (const f of files.filter((x) => attached.has(x.source_id))) {
      const chip = document.createElement("span");
      chip.className = "file-chip";
      chip.dataset.sourceId = f.source_id;
      chip.title = "Your next questions search only the attached files";
      chip.innerHTML = `<span class="chip-name">${esc(f.name)}</span><button type="button" aria-label="Stop asking about ${esc(f.name)}">×</button>`;
      chip.querySelector("button").addEventListener("click", () => { attached.delete(f.source_id); save(); renderChips(); });
      chipsBox.appendChild(chip);
    }
  }

  function renderList(quota) {
    document.getElementById("your-files-count").textContent = String(files.length);
    list.innerHTML = "";
    for (const f of files) {
      const li = document.createElement("li");
      li.dataset.sourceId = f.source_id;
      li.innerHTML = `<a class="file-name" href="/documents/${encodeURIComponent(f.chunk_uid)}/">${esc(f.name)}</a>` +
        `<span class="muted">${size(f.size)}</span><button type="button" class="ask-file">Ask about it</button>` +
        `<button type="button" class="delete-file">Delete</button>`;
      li.querySelector(".ask-file").addEventListener("click", () => { attached.add(f.source_id); save(); renderChips(); });
      li.querySelector(".delete-file").addEventListener("click", () => remove(f));
      list.appendChild(li);
    }
    if (quota) {
      document.getElementById("your-files-quota").textContent =
        `${quota.count} of ${quota.max_count} files, ${size(quota.bytes)} of ${size(quota.max_bytes)}`;
    }
  }

  async function refresh() {
    const r = await fetch("/ingest/my-files", { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!r.ok) return;
    const body = await r.json();
    files = body.files;
    const known = new Set(files.map((f) => f.source_id));
    attached = new Set([...attached].filter((id) => known.has(id)));
    save();
    renderList(body.quota);
    renderChips();
  }

  async function upload(fileList) {
    const chosen = [...fileList];
    if (!chosen.length) return;
    const form = new FormData();
    chosen.forEach((f) => form.append("files", f, f.name));
    say(`Reading ${chosen.length === 1 ? chosen[0].name : `${chosen.length} files`}…`);
    let r;
    try {
      r = await fetch("/ingest/my-files", { method: "POST", credentials: "same-origin", body: form,
        headers: { "X-CSRFToken": csrf, Accept: "application/json" } });
    } catch (e) {
      say("The upload did not reach the server. Check your connection and try again.", true);
      return;
    }
    const body = await r.json().catch(() => ({}));
    if (!r.ok) {
      say(body.detail ? String(body.detail) : `The upload was refused (${r.status}).`, true);
      return;
    }
    const failed = body.results.filter((x) => x.status !== "indexed");
    body.results.filter((x) => x.status === "indexed").forEach((x) => attached.add(x.source_id));
    save();
    files = body.files;
    renderList(body.quota);
    renderChips();
    say(failed.length ? failed.map((x) => `${x.name}: ${x.error}`).join(" · ") : "Attached: your next question is about it.", failed.length > 0);
  }

  async function remove(f) {
    if (!window.confirm(`Delete ${f.name}? It will no longer be searched or cited.`)) return;
    const r = await fetch(`/ingest/my-files/${f.source_id.split("/").map(encodeURIComponent).join("/")}`, {
      method: "DELETE", credentials: "same-origin", headers: { "X-CSRFToken": csrf, Accept: "application/json" } });
    if (!r.ok && r.status !== 404) { say(`Could not delete ${f.name} (${r.status}).`, true); return; }
    attached.delete(f.source_id);
    save();
    say(`Deleted ${f.name}.`);
    refresh();
  }

  document.getElementById("attach-btn").addEventListener("click", () => input.click());
  input.addEventListener("change", () => { upload(input.files); input.value = ""; });

  // Drag and drop anywhere on the page.
  const hasFiles = (e) => e.dataTransfer && [...(e.dataTransfer.types || [])].includes("Files");
  let depth = 0;
  document.addEventListener("dragenter", (e) => { if (!hasFiles(e)) return; depth += 1; overlay.hidden = false; });
  document.addEventListener("dragleave", () => { depth = Math.max(0, depth - 1); if (!depth) overlay.hidden = true; });
  document.addEventListener("dragover", (e) => { if (hasFiles(e)) e.preventDefault(); });
  document.addEventListener("drop", (e) => {
    if (!e.dataTransfer || !e.dataTransfer.files.length) return;
    e.preventDefault();
    depth = 0;
    overlay.hidden = true;
    upload(e.dataTransfer.files);
  });

  window.knowhubFiles = {
    askFields: () => (attached.size ? { source_ids: [...attached] } : {}),
    refresh,
  };
  refresh();
})();
