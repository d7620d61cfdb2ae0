// The tree page: the daemon's live supervision tree (GET /v1/supervision/tree), drawn
// again shortly after each supervision event (GET /v1/supervision/events, a stream), so
// a crash shows at once and its restart count goes up; for an admin, a Kill button on
// each running process (POST /v1/supervision/kill) crashes it on purpose.

import { api, can, el, listen, notice, pressing } from "./console.js";

const holder = document.getElementById("tree");
const status = document.getElementById("tree-status");
const eventList = document.getElementById("tree-events");
/** Events come in bursts (a crash, its restart, the children's starts): one redraw for each burst. */
const DEBOUNCE_MS = 100;
const KEPT_EVENTS = 30;

/** Restart counts by path at the last drawing, to mark the nodes whose count went up. */
let seen = new Map();
let timer = null;
let loading = false;
let again = false;

function killButton(path) {
  const button = el("button", {
    type: "button",
    className: "danger",
    text: "Kill",
    "aria-label": `Kill ${path}`,
    data: { action: "kill", path },
  });
  button.addEventListener("click", () =>
    pressing(button, async () => {
      try {
        const answer = await api("POST", "/v1/supervision/kill", { path });
        notice(`killed ${answer.path} (${answer.pid}); its supervisor restarts it`, "info");
      } catch (error) {
        if (!(error instanceof TypeError)) throw error;
        // No answer at all: the process was the one serving this page (the gateway's HTTP server).
        notice(`killed ${path}, and the connection with it; the page reconnects once it is back`, "info");
      }
    }),
  );
  return button;
}

function node(item, path, counts) {
  const restarts = item.restarts ?? 0;
  counts.set(path, restarts);
  const changed = path && seen.has(path) && seen.get(path) < restarts;
  const line = el(
    "div",
    { className: changed ? "node changed" : "node" },
    el("span", { className: "name", text: item.label || item.id }),
    el("span", { className: "meta", text: item.kind }),
    el("span", { className: `state state-${item.state}`, text: item.state }),
    el("span", { className: "restarts", data: { count: String(restarts) }, text: `restarts ${restarts}` }),
    el("span", { className: "meta pid", text: item.pid || "" }),
    item.mailbox ? el("span", { className: "meta", text: `mailbox ${item.mailbox}` }) : null,
    path && item.pid && can("admin") ? killButton(path) : null,
  );
  const entry = el("li", { data: { path: path || "/", id: item.id } }, line);
  const children = item.children || [];
  if (children.length) {
    entry.append(el("ul", {}, ...children.map((child) => node(child, path ? `${path}/${child.id}` : child.id, counts))));
  }
  return entry;
}

async function draw() {
  if (loading) {
    again = true;
    return;
  }
  loading = true;
  try {
    const tree = await api("GET", "/v1/supervision/tree");
    const counts = new Map();
    // The root's children are the apps: a path (as kill takes it) starts below the root.
    holder.replaceChildren(el("ul", {}, node(tree, "", counts)));
    seen = counts;
  } catch (error) {
    notice(`the tree could not be read: ${error.message}`);
  } finally {
    loading = false;
  }
  if (again) {
    again = false;
    draw();
  }
}

function soon() {
  clearTimeout(timer);
  timer = setTimeout(draw, DEBOUNCE_MS);
}

function logEvent(event) {
  const where = [event.supervisor, event.child_id].filter(Boolean).join(" / ");
  const restarts = event.restarts === undefined || event.restarts === null ? "" : ` (restarts ${event.restarts})`;
  const reason = event.reason ? `: ${event.reason}` : "";
  const at = typeof event.at === "number" ? new Date(event.at * 1000) : new Date(event.at);
  const time = Number.isNaN(at.getTime()) ? "" : at.toLocaleTimeString();
  eventList.prepend(el("li", { data: { kind: event.kind } }, `${time} ${event.kind} ${where}${restarts}${reason}`));
  while (eventList.children.length > KEPT_EVENTS) eventList.lastElementChild.remove();
}

listen(
  "/v1/supervision/events",
  {
    ready: () => draw(),
    supervision: (event) => {
      logEvent(event);
      soon();
    },
  },
  (state) => {
    status.textContent = state;
  },
);
draw();
