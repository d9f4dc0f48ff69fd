// The page from the keyboard: `/` to the search box, ↓ from the box to the first hit,
// ↑ ↓ (Home, End) between hits or between the tree's sessions, Enter opens the one
// chosen, Escape goes back to the box (and from the box clears it).
import { els } from "./dom.js";

// The items of a list that take the keyboard's selection.
const LISTS = [
  [() => els.hits, ".hit"],
  [() => els.tree, ".row"],
];

function move(items, from, key) {
  const at = items.indexOf(from);
  if (key === "Home") return items[0];
  if (key === "End") return items[items.length - 1];
  if (key === "ArrowDown") return items[Math.min(at + 1, items.length - 1)];
  return at <= 0 ? null : items[at - 1]; // ArrowUp; null: above the first
}

function navigable(list, selector) {
  list.addEventListener("keydown", (e) => {
    const item = e.target.closest(selector);
    if (!item || item.parentElement !== list) return;
    if (e.key === "Escape") {
      e.preventDefault();
      els.q.focus();
      return;
    }
    if (!["ArrowDown", "ArrowUp", "Home", "End"].includes(e.key)) return;
    e.preventDefault();
    const next = move([...list.querySelectorAll(`:scope > ${selector}`)], item, e.key);
    if (next) next.focus();
    else if (list === els.hits) els.q.focus(); // ↑ from the first hit: back to the box
  });
}

export function keyboard() {
  for (const [list, selector] of LISTS) navigable(list(), selector);
  els.q.addEventListener("keydown", (e) => {
    if (e.key !== "ArrowDown") return;
    const first = els.hits.querySelector(":scope > .hit");
    if (!first) return;
    e.preventDefault();
    first.focus();
  });
  document.addEventListener("keydown", (e) => {
    const typing = e.target.matches("input:not([type=checkbox]):not([type=radio]), textarea, select");
    if (e.key === "/" && !typing) {
      e.preventDefault();
      els.q.focus();
    }
  });
}
