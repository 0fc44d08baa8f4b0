// so101-studio's page: polls /state.json, posts actions and keys. No framework, no assets from elsewhere.
// A form's named fields shadow its properties (a field named "dataset" hides form.dataset): attributes are read with getAttribute.
'use strict';

const csrf = document.querySelector('meta[name="studio-csrf"]').content;
const tab = sessionStorage.getItem('studio-tab') || crypto.getRandomValues(new Uint32Array(4)).join('-');
sessionStorage.setItem('studio-tab', tab);
const POLL_MS = 500;
let state = null;
let liveCameras = [];

function say(text, error) {
  const box = document.getElementById('message');
  box.textContent = text;
  box.className = error ? 'error' : '';
}

async function post(path, body) {
  const reply = await fetch(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Studio-CSRF': csrf, 'X-Studio-Tab': tab },
    body: JSON.stringify(body || {}),
  });
  let data = {};
  try { data = await reply.json(); } catch (e) { data = { error: await reply.text() }; }
  if (!reply.ok) { say(data.error || `refused (${reply.status})`, true); }
  return { ok: reply.ok, data };
}

function fields(form) {
  const out = {};
  for (const element of form.elements) {
    if (element.name) { out[element.name] = element.value; }
  }
  return out;
}

const previews = new Map();  // form -> the number of its latest preview: older answers are dropped

async function preview(form) {
  const action = form.getAttribute('data-action');
  const code = document.querySelector(`[data-command-for="${action}"]`);
  const asked = (previews.get(form) || 0) + 1;
  previews.set(form, asked);
  code.dataset.pending = 'true';
  const reply = await fetch(`/preview/${action}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Studio-CSRF': csrf, 'X-Studio-Tab': tab },
    body: JSON.stringify(fields(form)),
  });
  const data = await reply.json();
  if (previews.get(form) !== asked) { return; }  // the form changed again while this one was asked
  code.textContent = data.command || '';
  code.title = data.error || '';
  code.classList.toggle('invalid', !data.command);
  delete code.dataset.pending;
}

function previewAll() {
  document.querySelectorAll('form.action').forEach((form) => preview(form));
}

document.querySelectorAll('form.action').forEach((form) => {
  form.addEventListener('input', () => preview(form));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const { ok, data } = await post(`/actions/${form.getAttribute('data-action')}`, fields(form));
    if (ok) { say(`job ${data.job} started: ${data.command}`); poll(); }
  });
});

document.querySelectorAll('button.copy').forEach((button) => {
  button.addEventListener('click', async () => {
    const text = document.querySelector(`[data-command-for="${button.dataset.copyFor}"]`).textContent;
    try { await navigator.clipboard.writeText(text); say('copied: ' + text); } catch (e) { say(text); }
  });
});

document.querySelectorAll('nav button').forEach((button) => {
  button.addEventListener('click', () => {
    document.querySelectorAll('nav button').forEach((b) => b.classList.toggle('active', b === button));
    document.querySelectorAll('.panel').forEach((p) => { p.hidden = p.id !== `panel-${button.dataset.panel}`; });
  });
});

document.querySelectorAll('[data-key]').forEach((button) => {
  button.addEventListener('click', async () => {
    if (!state || !state.rig_job) { say('no command is running on the rig', true); return; }
    const { ok } = await post(`/jobs/${state.rig_job}/keys`, { key: button.dataset.key });
    if (ok) { say(`${button.dataset.key.replace('_', ' ')}: sent to job ${state.rig_job}`); }
  });
});

document.querySelectorAll('[data-stop]').forEach((button) => {
  button.addEventListener('click', async () => {
    if (!state || !state.rig_job) { say('no command is running on the rig', true); return; }
    const { ok } = await post(`/jobs/${state.rig_job}/stop`);
    if (ok) { say(`job ${state.rig_job}: stopping as Ctrl-C stops it`); }
  });
});

document.getElementById('estop').addEventListener('click', async () => {
  const { ok, data } = await post('/estop');
  if (ok) { say(`e-stop: job ${data.job} freezes the followers`); }
});

document.getElementById('take-control').addEventListener('click', async () => {
  if (state && state.control.held && !state.control.you
      && !window.confirm('Another page controls the studio. Take control from it?')) { return; }
  const { data } = await post('/control', { take_over: true });
  say(data.controlling ? 'this page controls the studio' : 'control was not given', !data.controlling);
  poll();
});

document.getElementById('release-control').addEventListener('click', async () => {
  await post('/control/release');
  say('control handed back: any page may take it');
  poll();
});

document.getElementById('dataset-picker').addEventListener('change', pickDataset);

function pickDataset() {
  const name = document.getElementById('dataset-picker').value;
  document.querySelectorAll('[data-picked]').forEach((input) => { input.value = name; });
  const links = document.getElementById('dataset-links');
  links.replaceChildren();
  if (name) {
    for (const [label, path] of [['review', '/'], ['health', '/health'], ['curation', '/curation']]) {
      const a = document.createElement('a');
      a.href = `/datasets/${encodeURIComponent(name)}${path}`;
      a.textContent = label;
      a.id = `open-${label}`;
      links.append(a, ' ');
    }
  }
  previewAll();
}

function cell(row, text, className) {
  const td = document.createElement('td');
  td.textContent = text === null || text === undefined ? '–' : String(text);
  if (className) { td.className = className; }
  row.append(td);
  return td;
}

const ARMS = ['left_follower', 'right_follower', 'left_leader', 'right_leader'];

function renderArms(rows) {
  // Each arm's port, torque, motor status (temperature) and supply voltage, from the doctor's rows.
  const body = document.querySelector('#arm-summary tbody');
  body.replaceChildren();
  for (const arm of ARMS) {
    const mine = new Map(rows.filter((r) => r.subject === arm).map((r) => [r.check, r]));
    if (!mine.size) { continue; }
    const tr = document.createElement('tr');
    tr.dataset.arm = arm;
    cell(tr, arm);
    for (const check of ['port', 'torque', 'motor status', 'power']) {
      const row = mine.get(check);
      cell(tr, row ? row.detail : null, row ? row.status : '');
    }
    body.append(tr);
  }
}

function renderDoctor(doctor) {
  const body = document.querySelector('#doctor-rows tbody');
  const key = JSON.stringify(doctor);
  if (body.dataset.key === key) { return; }
  body.dataset.key = key;
  renderArms((doctor && doctor.rows) || []);
  body.replaceChildren();
  for (const row of (doctor && doctor.rows) || []) {
    const tr = document.createElement('tr');
    cell(tr, row.subject); cell(tr, row.check); cell(tr, row.status, row.status); cell(tr, row.detail);
    cell(tr, row.next_step).classList.add('next-step');
    body.append(tr);
  }
}

function renderDatasets(datasets) {
  const picker = document.getElementById('dataset-picker');
  const names = datasets.map((d) => d.name);
  if (picker.dataset.names !== names.join('\n')) {
    const chosen = picker.value;
    picker.replaceChildren(...names.map((n) => new Option(n, n, false, n === chosen)));
    picker.dataset.names = names.join('\n');
    pickDataset();
  }
  const list = document.querySelector('#dataset-list tbody');
  list.replaceChildren();
  for (const d of datasets) {
    const tr = document.createElement('tr');
    tr.dataset.dataset = d.name;
    cell(tr, d.name); cell(tr, d.episodes); cell(tr, d.root);
    list.append(tr);
  }
  const recording = document.querySelector('form[data-action="record"] input[name="dataset"]').value;
  const current = datasets.find((d) => d.name === recording);
  document.getElementById('record-counter').textContent = current ? current.episodes : 0;
  const cards = document.querySelector('#record-cards tbody');
  const key = JSON.stringify(current ? current.cards : []);
  if (cards.dataset.key !== key) {
    cards.dataset.key = key;
    cards.replaceChildren();
    for (const c of (current ? current.cards : [])) {
      const tr = document.createElement('tr');
      tr.dataset.episode = c.episode;
      for (const k of ['episode', 'frames', 'duration_s', 'achieved_fps', 'skew_p99_ms', 'idle_fraction', 'limit_hits', 'peak_temperature_c']) {
        cell(tr, typeof c[k] === 'number' ? Math.round(c[k] * 100) / 100 : c[k]);
      }
      cell(tr, (c.failed_gates || []).join(', ') || 'none');
      cell(tr, c.verdict, c.verdict === 'keep' ? 'pass' : 'warn');
      cards.append(tr);
    }
  }
}

function renderJobs(jobs) {
  const list = document.getElementById('job-list');
  for (const job of jobs.slice().reverse()) {
    let box = document.getElementById(`job-${job.number}`);
    if (!box) {
      box = document.createElement('div');
      box.className = 'job';
      box.id = `job-${job.number}`;
      const head = document.createElement('div');
      const code = document.createElement('code');
      code.className = 'command';
      code.textContent = job.command;
      const copy = document.createElement('button');
      copy.type = 'button';
      copy.textContent = 'copy';
      copy.addEventListener('click', () => navigator.clipboard.writeText(job.command).catch(() => say(job.command)));
      const status = document.createElement('span');
      status.className = 'status';
      head.append(`job ${job.number} `, code, ' ', copy, ' ', status);
      const pre = document.createElement('pre');
      box.append(head, pre);
      list.prepend(box);
    }
    box.dataset.running = job.running;
    box.dataset.exit = job.exit_code === null ? '' : job.exit_code;
    box.querySelector('.status').textContent = job.running ? 'running' : `exited ${job.exit_code}`;
    const pre = box.querySelector('pre');
    const text = job.lines.join('\n');
    if (pre.textContent !== text) {
      const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      pre.textContent = text;
      if (atEnd) { pre.scrollTop = pre.scrollHeight; }
    }
  }
}

function renderAsked(current) {
  // The criterion a deploy asks to be scored now (its terminal's prompt), beside the score buttons;
  // none once the rollout's scores are printed ("rollout 3: R1=1 R2=0.5 R3=0").
  const job = current.jobs.find((j) => j.number === current.rig_job);
  const lines = job ? job.lines.join('\n') : '';
  const asked = [...lines.matchAll(/score (\w+) of rollout (\d+)/g)].pop();
  let text = 'none';
  if (asked && !new RegExp(`rollout ${asked[2]}: \\w+=`).test(lines.slice(asked.index))) {
    text = `${asked[1]} of rollout ${asked[2]}`;
  }
  document.getElementById('score-asked').textContent = text;
}

function renderEvents(events) {
  const list = document.getElementById('events');
  if (list.childElementCount === events.length) { return; }
  list.replaceChildren(...events.map((e) => {
    const li = document.createElement('li');
    li.textContent = `${e.at_s.toFixed(1)} s: ${e.text}`;
    return li;
  }));
}

async function renderLive(live) {
  const boxes = [document.getElementById('live-rig'), document.getElementById('live-record')];
  if (!live) { liveCameras = []; boxes.forEach((b) => b.replaceChildren()); return; }
  if (!liveCameras.length) {
    const reply = await fetch('/live/state.json', { cache: 'no-store' });
    if (reply.status !== 200) { return; }
    liveCameras = (await reply.json()).cameras || [];
  }
  for (const camera of liveCameras) {
    // Fetched, then shown: a moment with no picture (204) keeps the last one instead of a broken image.
    const reply = await fetch(`/live/frame/${camera}.jpg`, { cache: 'no-store' });
    if (reply.status !== 200) { continue; }
    const url = URL.createObjectURL(await reply.blob());
    for (const box of boxes) {
      let img = box.querySelector(`img[data-camera="${camera}"]`);
      if (!img) {
        img = document.createElement('img');
        img.dataset.camera = camera;
        img.alt = camera;
        box.append(img);
      }
      const old = img.src;
      img.src = url;
      if (old.startsWith('blob:') && old !== url && !boxes.some((b) => b.querySelector(`img[src="${old}"]`))) {
        URL.revokeObjectURL(old);
      }
    }
  }
}

async function poll() {
  let reply;
  try {
    reply = await fetch('/state.json', { headers: { 'X-Studio-Tab': tab }, cache: 'no-store' });
  } catch (e) {
    document.getElementById('control-state').textContent = 'the studio does not answer';
    return;
  }
  if (!reply.ok) { return; }
  state = await reply.json();
  const you = state.control.you;
  document.body.dataset.controlling = you;
  const label = document.getElementById('control-state');
  label.dataset.you = you;
  label.textContent = you ? 'you control the studio' : (state.control.held ? 'read-only: another page controls the studio' : 'read-only: nobody controls the studio');
  document.getElementById('take-control').hidden = you;
  document.getElementById('release-control').hidden = !you;
  document.body.dataset.rigJob = state.rig_job || '';
  renderAsked(state);
  renderDoctor(state.doctor);
  renderDatasets(state.datasets);
  renderJobs(state.jobs);
  renderEvents(state.events);
  renderLive(state.live);
}

async function start() {
  await post('/control', { take_over: false });  // control if nobody holds it; read-only otherwise
  previewAll();
  await poll();
  setInterval(poll, POLL_MS);
}

start();
