// seqrep web page: label the textarea's text with POST /v1/label and highlight the spans
// inline (one colour per label, displaCy style), with the JSON beside. No dependencies.
"use strict";

const KNOWN = { PER: "#aa9cfc", PERSON: "#aa9cfc", ORG: "#7aecec", LOC: "#ff9561",
  GPE: "#feca74", MISC: "#e4e7d2", DATE: "#bfe1d9", TIME: "#bfe1d9", MONEY: "#e4e7d2",
  NORP: "#c887fb", FAC: "#9cc9cc", EVENT: "#ffeb80", PRODUCT: "#bfeeb7", WORK_OF_ART: "#f0d0ff",
  LANGUAGE: "#ff8197", CARDINAL: "#e4e7d2", PERCENT: "#e4e7d2", QUANTITY: "#e4e7d2" };
const PALETTE = ["#aa9cfc", "#7aecec", "#ff9561", "#feca74", "#bfeeb7", "#c887fb", "#ffeb80",
  "#9cc9cc", "#ff8197", "#f0d0ff", "#bfe1d9", "#e4e7d2", "#d9fe74", "#fea3c5"];
const colours = {};

// One colour per label: displaCy's for the usual entity types, else the next free one.
function colour(label) {
  if (!(label in colours)) {
    const taken = Object.values(colours);
    const known = KNOWN[label.toUpperCase()];
    const free = PALETTE.filter((c) => !taken.includes(c));
    colours[label] = known && !taken.includes(known) ? known
      : free[0] || PALETTE[taken.length % PALETTE.length];
    addLegend(label);
  }
  return colours[label];
}

const $ = (id) => document.getElementById(id);

function addLegend(label) {
  const item = document.createElement("span");
  item.className = "legend-item";
  item.dataset.label = label;
  item.textContent = label;
  item.style.setProperty("--c", colours[label]);
  $("legend").appendChild(item);
}

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

// One record -> a div with the text and a <mark> per span (offsets are code points of the
// text as sent; JS strings index UTF-16 units, so slice over an array of code points).
function renderRecord(record) {
  const doc = el("div", "doc");
  const chars = Array.from(record.text);
  let pos = 0;
  const spans = [...record.spans].sort((a, b) => a.start - b.start);
  for (const s of spans) {
    if (s.start > pos) doc.appendChild(document.createTextNode(chars.slice(pos, s.start).join("")));
    const mark = el("mark", "entity");
    mark.dataset.label = s.label;
    mark.dataset.start = s.start;
    mark.dataset.end = s.end;
    mark.dataset.score = s.score;
    mark.title = `${s.label} · score ${s.score.toFixed(4)}`;
    mark.style.setProperty("--c", colour(s.label));
    mark.appendChild(el("span", "entity-text", chars.slice(s.start, s.end).join("")));
    mark.appendChild(el("span", "entity-label", s.label));
    doc.appendChild(mark);
    pos = Math.max(pos, s.end);
  }
  if (pos < chars.length) doc.appendChild(document.createTextNode(chars.slice(pos).join("")));
  return doc;
}

function setStatus(state, text) {
  $("status").dataset.state = state;
  $("status").textContent = text;
}

async function run() {
  const text = $("input").value;
  const body = { text };
  if ($("decoding").value) body.decoding = $("decoding").value;
  $("run").disabled = true;
  setStatus("running", "running…");
  const t0 = performance.now();
  try {
    const res = await fetch("/v1/label", { method: "POST",
      headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const data = await res.json();
    $("json").textContent = JSON.stringify(data, null, 2);
    if (!res.ok) {
      setStatus("error", `${res.status}: ${(data.error && data.error.message) || res.statusText}`);
      return;
    }
    const out = $("output");
    out.replaceChildren(...data.results.map(renderRecord));
    const n = data.results.reduce((k, r) => k + r.spans.length, 0);
    setStatus("done", `${n} span${n === 1 ? "" : "s"} in ${Math.round(performance.now() - t0)} ms`);
  } catch (err) {
    setStatus("error", String(err));
  } finally {
    $("run").disabled = false;
  }
}

async function loadModel() {
  try {
    const info = await (await fetch("/v1/model")).json();
    $("model").textContent = `${info.model} · r=${info.repetitions} · exit layer ` +
      `${info.exit_layer ?? "all"} · unmask ${info.unmask} · ${info.decoding} decoding`;
    for (const t of info.entity_types || []) colour(t);
  } catch (err) {
    $("model").textContent = "model information unavailable";
  }
}

$("run").addEventListener("click", run);
$("input").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); run(); }
});

// The URL's text and decoding fill the form at once (no flash of the example text, and a
// reader of the page never sees the old value); the run waits for the model's colours.
const params = new URLSearchParams(location.search);
if (params.has("decoding")) $("decoding").value = params.get("decoding");
if (params.has("text")) $("input").value = params.get("text");
loadModel().then(() => { if (params.has("text")) run(); });
