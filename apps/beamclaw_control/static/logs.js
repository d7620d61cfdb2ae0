// The logs page (an admin's: the template shows others a note): the daemon's log, live
// (GET /v1/logs, a stream: its last lines, then each new one; scrubbed by the server).

import { el, listen } from "./console.js";

const list = document.getElementById("log-lines");
const status = document.getElementById("logs-status");
const level = document.getElementById("logs-level");
const follow = document.getElementById("logs-follow");
/** Lines kept in the page; older ones go. */
const KEPT = 2000;
/** How many of the last lines the server sends first (again on each reconnection). */
const TAIL = 200;
/** Loguru's level numbers, for the level filter (a level not listed is always shown). */
const RANKS = { TRACE: 5, DEBUG: 10, INFO: 20, SUCCESS: 25, WARNING: 30, ERROR: 40, CRITICAL: 50 };

function shown(item) {
  return (RANKS[item.dataset.level] ?? 100) >= Number(level.value);
}

/** The time of day of a line's time as the log file has it ("2026-11-27 03:35:24.348000+00:00"). */
function clock(value) {
  const found = /\d{2}:\d{2}:\d{2}(\.\d{3})?/.exec(String(value ?? ""));
  return found ? found[0] : "";
}

function add(line) {
  const name = String(line.level || "").toUpperCase();
  const item = el(
    "li",
    { className: "log-line", data: { level: name } },
    el("span", { className: "log-time", title: line.time || "", text: clock(line.time) }),
    el("span", { className: `log-level level-${name.toLowerCase()}`, text: name }),
    line.app ? el("span", { className: "log-app", text: line.app }) : null,
    el("span", { className: "log-message", text: line.message }),
  );
  item.hidden = !shown(item);
  list.append(item);
  while (list.children.length > KEPT) list.firstElementChild.remove();
  if (follow.checked) list.scrollTop = list.scrollHeight;
}

listen(`/v1/logs?lines=${TAIL}`, { log: add }, (state) => {
  // A (re)connection starts with the last lines again: they replace what is shown.
  if (state === "live") list.replaceChildren();
  status.textContent = state;
});
level.addEventListener("change", () => {
  for (const item of list.children) item.hidden = !shown(item);
});
document.getElementById("logs-clear").addEventListener("click", () => list.replaceChildren());
