// The episode page: three videos on one master clock, frame stepping, evidence jumps, keyboard shortcuts.
// Judge text is never touched here: the server renders it (escaped); this script only sets textContent.
"use strict";
(() => {
  const data = JSON.parse(document.getElementById("episode-data").textContent);
  const fps = data.fps;
  const last = data.length - 1;
  const videos = Array.from(document.querySelectorAll("video[data-view]"));
  const master = videos.find((v) => v.dataset.view === "overhead") || videos[0];
  const scrubber = document.getElementById("scrubber");
  const label = document.getElementById("frame-label");
  const playButton = document.getElementById("play");
  const sections = Array.from(document.querySelectorAll("section.criterion"));
  let playing = false;
  let selected = Math.max(0, data.criteria.indexOf(data.selected));

  const clamp = (x, lo, hi) => Math.min(hi, Math.max(lo, x));
  const offset = (v) => parseFloat(v.dataset.from); // the episode's start inside the shared MP4, seconds
  let stillTime = 0; // the cursor of an episode with no videos on disk (a dataset shared without them)
  const episodeTime = () => (master ? master.currentTime - offset(master) : stillTime);
  const frameAt = (t) => clamp(Math.floor(t * fps + 1e-6), 0, last);
  const frameTime = (f) => (clamp(f, 0, last) + 0.5) / fps; // middle of the frame's display interval

  function show() {
    const t = Math.max(0, episodeTime());
    const f = frameAt(t);
    scrubber.value = String(f);
    label.textContent = `frame ${f} / ${last} · ${t.toFixed(3)} s`;
    label.dataset.frame = String(f);
    for (const field of document.querySelectorAll("input.time-field")) field.value = t.toFixed(4);
    playButton.textContent = playing ? "pause" : "play";
  }

  function seek(t) {
    const target = clamp(t, 0, frameTime(last));
    stillTime = target;
    for (const v of videos) v.currentTime = offset(v) + target;
    show();
  }

  function pause() {
    const wasPlaying = playing;
    playing = false;
    for (const v of videos) v.pause();
    if (wasPlaying) seek(frameTime(frameAt(episodeTime()))); // every view on the same frame when stopped
    show();
  }

  function play() {
    if (!master) return;
    if (frameAt(episodeTime()) >= last) seek(frameTime(0));
    playing = true;
    for (const v of videos) v.play().catch(() => {}); // a later pause or seek aborts the promise: harmless
    requestAnimationFrame(tick);
    show();
  }

  function tick() {
    if (!playing) return;
    const t = episodeTime();
    if (t >= data.length / fps - 0.5 / fps || master.ended) {
      pause(); // the next episode starts here in the shared file
      seek(frameTime(last));
      return;
    }
    for (const v of videos) {
      if (v === master) continue;
      const want = offset(v) + t;
      if (Math.abs(v.currentTime - want) > 2 / fps) v.currentTime = want; // followers follow the master clock
      if (v.paused) v.play().catch(() => {});
    }
    show();
    requestAnimationFrame(tick);
  }

  function step(delta) {
    pause();
    seek(frameTime(frameAt(episodeTime()) + delta));
  }

  function selectCriterion(i) {
    if (!sections.length) return;
    selected = (i + sections.length) % sections.length;
    sections.forEach((s, k) => s.classList.toggle("selected", k === selected));
    sections[selected].scrollIntoView({ block: "nearest" });
  }

  function selectedForm() {
    return sections.length ? sections[selected].querySelector("form.override") : null;
  }

  function setScore(value) {
    const form = selectedForm();
    const radio = form && form.querySelector(`input[name=score][value="${value}"]`);
    if (radio) radio.checked = true;
  }

  function confirmShown() {
    const form = selectedForm();
    if (!form) return;
    const shown = form.querySelector("input[name=expected_old]").value;
    if (shown === "") return;
    setScore(String(parseFloat(shown)));
    form.querySelector("select[name=reason]").value = "confirmed";
  }

  function nextEvidence() {
    if (!sections.length) return;
    const times = Array.from(sections[selected].querySelectorAll(".evidence .frame-ref[data-t]"))
      .map((b) => parseFloat(b.dataset.t))
      .sort((a, b) => a - b);
    if (!times.length) return;
    const now = frameAt(episodeTime());
    const next = times.find((t) => frameAt(t) > now);
    pause();
    seek(frameTime(frameAt(next === undefined ? times[0] : next)));
  }

  // Each video starts at the episode's start inside its shared file. A video whose metadata loaded
  // before this script ran never fires loadedmetadata again: it is placed at the end of this script.
  function place(v) {
    v.currentTime = offset(v) + clamp(data.start_t || frameTime(0), 0, frameTime(last));
    if (v === master) show();
  }

  for (const v of videos) {
    v.addEventListener("loadedmetadata", () => place(v));
    v.addEventListener("seeked", () => { if (v === master && !playing) show(); });
    v.addEventListener("error", () => {
      const note = document.createElement("p");
      note.className = "error";
      note.textContent = `the ${v.dataset.view} video cannot be played by this browser`;
      v.parentElement.appendChild(note);
    });
  }
  playButton.addEventListener("click", () => { playButton.blur(); playing ? pause() : play(); });
  document.getElementById("step-back").addEventListener("click", (ev) => { ev.currentTarget.blur(); step(-1); });
  document.getElementById("step-fwd").addEventListener("click", (ev) => { ev.currentTarget.blur(); step(1); });
  scrubber.addEventListener("input", () => {
    const f = parseInt(scrubber.value, 10); // read first: pause() redraws the scrubber at the shown frame
    pause();
    seek(frameTime(f));
  });
  for (const b of document.querySelectorAll(".frame-ref[data-t]")) {
    b.addEventListener("click", () => { b.blur(); pause(); seek(frameTime(frameAt(parseFloat(b.dataset.t)))); });
  }
  sections.forEach((s, k) => s.addEventListener("click", () => selectCriterion(k)));

  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") {
      if (document.activeElement) document.activeElement.blur();
      return;
    }
    const target = ev.target;
    const typing = target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement
      || (target instanceof HTMLInputElement && !["radio", "range", "checkbox"].includes(target.type));
    if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const form = selectedForm();
    switch (ev.key) {
      case " ": playing ? pause() : play(); break;
      case ",": step(-1); break;
      case ".": step(1); break;
      case "ArrowLeft": pause(); seek(frameTime(frameAt(episodeTime() - 1))); break;
      case "ArrowRight": pause(); seek(frameTime(frameAt(episodeTime() + 1))); break;
      case "j": if (data.next_url) window.location.href = data.next_url; break;
      case "k": if (data.prev_url) window.location.href = data.prev_url; break;
      case "[": selectCriterion(selected - 1); break;
      case "]": selectCriterion(selected + 1); break;
      case "0": setScore("0"); break;
      case "5": setScore("0.5"); break;
      case "1": setScore("1"); break;
      case "c": confirmShown(); break;
      case "e": nextEvidence(); break;
      case "n": if (form) form.querySelector("textarea[name=note]").focus(); break;
      case "s": if (form) form.requestSubmit(); break;
      default: return;
    }
    ev.preventDefault();
  });

  const hash = window.location.hash.replace("#criterion-", "");
  selectCriterion(data.criteria.includes(hash) ? data.criteria.indexOf(hash) : selected);
  for (const v of videos) if (v.readyState >= 1) place(v);
  show();
})();
