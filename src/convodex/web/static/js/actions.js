// "Copy resume command" and "Export" on every hit and on the opened session (L15).
import { api } from "./api.js";
import { el } from "./dom.js";
import { state } from "./state.js";

function exportURL(target, format) {
  const params = new URLSearchParams({ format, path: target.sessionPath });
  if (state.redact) params.set("redact", "1");
  return api(`/sessions/${encodeURIComponent(target.sessionId)}/export?${params}`);
}

// The clipboard where the page may write to it (a secure context: https, or
// http://127.0.0.1 and localhost); else the command is selected in a small box.
async function copyText(text, box, status) {
  let copied = false;
  if (navigator.clipboard && navigator.clipboard.writeText) {
    try {
      await navigator.clipboard.writeText(text);
      copied = true;
    } catch (_) {
      copied = false; // refused (no permission, no focus): fall back to the box
    }
  }
  box.hidden = copied;
  if (!copied) {
    box.value = text;
    box.focus();
    box.select();
  }
  status.textContent = copied ? "Copied" : "Press Ctrl+C (⌘C) to copy";
  status.hidden = false;
  clearTimeout(status.timer);
  if (copied) status.timer = setTimeout(() => (status.hidden = true), 2000);
}

// The export choices: a download link per format and the redact option, on a line
// of their own under the buttons (so nothing moves and nothing overflows a phone).
function exportMenu(target) {
  const menu = el("div", "export-menu");
  menu.hidden = true;
  const links = [["markdown", "Markdown"], ["html", "HTML"], ["json", "JSON"]].map(([format, label]) => {
    const link = el("a", "export-link", label);
    link.dataset.format = format;
    link.setAttribute("download", ""); // the server names the file
    link.title = `Download this session as ${label}`;
    return link;
  });
  const redact = el("input", "export-redact");
  redact.type = "checkbox";
  const refresh = () => {
    redact.checked = state.redact;
    for (const link of links) link.href = exportURL(target, link.dataset.format);
  };
  redact.addEventListener("change", () => {
    state.redact = redact.checked;
    refresh();
  });
  const label = el("label", "check");
  label.append(redact, document.createTextNode(" redact secrets"));
  menu.append(el("span", "export-label", "Download as"), ...links, label);
  menu.refresh = refresh;
  return menu;
}

// The action bar of a session: {sessionId, sessionPath, resumeCommand}.
export function sessionActions(target) {
  const bar = el("div", "actions");
  const status = el("span", "copy-status");
  status.setAttribute("role", "status");
  status.hidden = true;
  const box = el("input", "copy-box");
  box.readOnly = true;
  box.hidden = true;
  box.setAttribute("aria-label", "Resume command");
  if (target.resumeCommand) {
    const copy = el("button", "copy-resume", "Copy resume command");
    copy.type = "button";
    copy.title = target.resumeCommand;
    copy.addEventListener("click", () => copyText(target.resumeCommand, box, status));
    bar.append(copy);
  }
  const menu = exportMenu(target);
  const toggle = el("button", "export-toggle", "Export");
  toggle.type = "button";
  toggle.setAttribute("aria-expanded", "false");
  toggle.addEventListener("click", () => {
    menu.refresh(); // another bar may have changed the redact choice
    menu.hidden = !menu.hidden;
    toggle.setAttribute("aria-expanded", String(!menu.hidden));
  });
  bar.append(toggle, status, menu, box);
  // Clicks and keys here act on the controls, never on the hit around them.
  bar.addEventListener("click", (e) => e.stopPropagation());
  bar.addEventListener("keydown", (e) => e.stopPropagation());
  return bar;
}
