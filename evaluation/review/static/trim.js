// The trim form under the traces: "start at the cursor" / "end after the cursor" fill it from the
// players' frame (#frame-label's data-frame); the traces shade what the span leaves out (traces.js
// reads #trim-start and #trim-stop on every redraw, and redraws when they change).
"use strict";
(() => {
  const label = document.getElementById("frame-label");
  const start = document.getElementById("trim-start");
  const stop = document.getElementById("trim-stop");
  if (!label || !start || !stop) return;
  const frame = () => parseInt(label.dataset.frame || "0", 10) || 0;
  const changed = () => window.dispatchEvent(new Event("trimchange"));
  document.getElementById("trim-start-here").addEventListener("click", () => { start.value = String(frame()); changed(); });
  document.getElementById("trim-stop-here").addEventListener("click", () => { stop.value = String(frame() + 1); changed(); });
  start.addEventListener("input", changed);
  stop.addEventListener("input", changed);
})();
