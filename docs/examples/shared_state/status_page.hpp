#pragma once
// GET / of the shared-state service: a page that shows the instances, their
// partitions and each task's state (restoring with a progress bar, running,
// standby with its lag), refreshes itself every second from GET /overview,
// and looks up an object's state through GET /objects/{id}.

namespace shared_state {

inline constexpr const char* status_page = R"html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>shared state</title>
<style>
  body { font: 14px system-ui, sans-serif; margin: 2em; color: #222; }
  h1 { font-size: 1.3em; }
  table { border-collapse: collapse; margin-bottom: 1.5em; }
  td, th { border: 1px solid #ccc; padding: 4px 10px; text-align: left; vertical-align: top; }
  .task { display: inline-block; margin: 2px 6px 2px 0; padding: 2px 6px; border-radius: 4px; }
  .running { background: #d4f7d4; }
  .restoring { background: #fff2c6; }
  .standby { background: #e4e9ff; }
  .unreachable { color: #b00; }
  progress { width: 80px; vertical-align: middle; }
  #answer { white-space: pre; font-family: monospace; }
</style>
</head>
<body>
<h1>shared state &mdash; <span id="app"></span></h1>
<p>Answered by <b id="self"></b>; metadata version <span id="version"></span>; updated <span id="updated">never</span>.</p>
<table>
  <thead><tr><th>instance</th><th>endpoint</th><th>tasks</th></tr></thead>
  <tbody id="instances"></tbody>
</table>
<form id="lookup">
  <label>object <input id="object" name="object" required></label>
  <button type="submit">look up</button>
</form>
<p id="answer"></p>
<script>
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function taskView(t) {
  const span = el('span', 'task ' + t.state);
  span.dataset.partition = t.partition;
  span.dataset.state = t.state;
  span.appendChild(document.createTextNode('p' + t.partition + ' ' + t.state));
  if (t.state === 'restoring') {
    const bar = el('progress');
    bar.max = Math.max(t.to_restore, 1);
    bar.value = t.restored;
    span.appendChild(document.createTextNode(' '));
    span.appendChild(bar);
  }
  if (t.state === 'standby') span.appendChild(document.createTextNode(' lag ' + (t.lag < 0 ? '?' : t.lag)));
  return span;
}
async function refresh() {
  try {
    const r = await fetch('/overview');
    const o = await r.json();
    document.getElementById('app').textContent = o.application || '';
    document.getElementById('self').textContent = o.answered_by || '';
    document.getElementById('version').textContent = o.version === undefined ? '-' : o.version;
    const body = document.getElementById('instances');
    body.replaceChildren();
    for (const i of (o.instances || [])) {
      const row = el('tr');
      row.dataset.instance = i.instance;
      row.appendChild(el('td', '', i.instance));
      row.appendChild(el('td', '', i.endpoint));
      const tasks = el('td');
      if (i.error) tasks.appendChild(el('span', 'unreachable', 'unreachable: ' + i.error));
      for (const t of (i.tasks || [])) tasks.appendChild(taskView(t));
      row.appendChild(tasks);
      body.appendChild(row);
    }
    document.getElementById('updated').textContent = new Date().toLocaleTimeString();
  } catch (e) {
    document.getElementById('updated').textContent = 'failed: ' + e;
  }
}
document.getElementById('lookup').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const id = document.getElementById('object').value;
  const out = document.getElementById('answer');
  delete out.dataset.status;  // no earlier answer's status next to this one's error
  try {
    const r = await fetch('/objects/' + encodeURIComponent(id));
    const body = await r.json();
    out.dataset.status = r.status;
    out.textContent = r.status + ' ' + JSON.stringify(body, null, 1);
  } catch (e) {
    out.textContent = 'failed: ' + e;
  }
});
refresh();
setInterval(refresh, 1000);
</script>
</body>
</html>
)html";

}  // namespace shared_state
