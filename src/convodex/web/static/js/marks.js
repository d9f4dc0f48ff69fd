// Matched words as the server marked them: every hit, and every message read with
// the query, carries `highlights`, [start, end) spans from the library's highlighter
// in Unicode code points. The page has no tokenizer or query parser of its own.
import { el } from "./dom.js";

// The spans in UTF-16 units (JavaScript string indices) of `text`.
function utf16(text, spans) {
  const sorted = [...spans].sort((a, b) => a[0] - b[0]);
  const out = [];
  let point = 0;
  let unit = 0;
  let next = 0;
  const at = [];
  // Code point index -> UTF-16 index, for the ends the spans name only.
  const wanted = new Set(sorted.flat());
  for (const ch of text) {
    if (wanted.has(point)) at[point] = unit;
    point += 1;
    unit += ch.length;
  }
  if (wanted.has(point)) at[point] = unit;
  for (const [start, end] of sorted) {
    if (at[start] === undefined || at[end] === undefined || start < next) continue;
    out.push([at[start], at[end]]);
    next = end;
  }
  return out;
}

// A fragment of text nodes and <mark> elements: safe by construction.
export function marked(text, spans) {
  const fragment = document.createDocumentFragment();
  let at = 0;
  for (const [start, end] of utf16(text, spans || [])) {
    if (start > at) fragment.append(document.createTextNode(text.slice(at, start)));
    fragment.append(el("mark", null, text.slice(start, end)));
    at = end;
  }
  if (at < text.length) fragment.append(document.createTextNode(text.slice(at)));
  return fragment;
}
