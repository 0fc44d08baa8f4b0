// The episodes list: j/k move the highlighted row, Enter opens it.
"use strict";
(() => {
  const rows = Array.from(document.querySelectorAll("#episodes tbody tr[data-href]"));
  let current = -1;
  function highlight(i) {
    if (!rows.length) return;
    current = Math.min(rows.length - 1, Math.max(0, i));
    rows.forEach((r, k) => r.classList.toggle("selected", k === current));
    rows[current].scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("keydown", (ev) => {
    const t = ev.target;
    if (t instanceof HTMLInputElement || t instanceof HTMLSelectElement || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === "j") highlight(current + 1);
    else if (ev.key === "k") highlight(current - 1);
    else if (ev.key === "Enter" && current >= 0) window.location.href = rows[current].dataset.href;
    else return;
    ev.preventDefault();
  });
})();
