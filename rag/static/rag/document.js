(() => {
  "use strict";
  // The server escaped the text; textContent gives it back raw and the renderer escapes it again.
  document.querySelectorAll(".md").forEach((el) => { el.innerHTML = window.knowhubMarkdown(el.textContent); });
  document.querySelectorAll(".md-inline").forEach((el) => { el.textContent = window.knowhubPlain(el.textContent); });
  // Came from the ask page: go back to the thread rather than to an empty page.
  const back = document.getElementById("back-link");
  if (document.referrer && new URL(document.referrer).origin === location.origin && new URL(document.referrer).pathname === "/") back.href = document.referrer;
  const cited = document.getElementById("cited");
  if (cited && !location.hash) cited.scrollIntoView({ block: "start" });
})();
