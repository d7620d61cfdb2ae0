// The MCP page: each MCP server (GET /v1/mcp/servers) with its state, tools, restarts and
// last error, and their tools (GET /v1/mcp/tools), read again every few seconds; for an
// admin, Restart on each server (POST /v1/mcp/servers/<name>/restart).

import { api, can, el, notice, pressing } from "./console.js";

const table = document.querySelector("#mcp-servers tbody");
const empty = document.getElementById("mcp-empty");
const status = document.getElementById("mcp-status");
const toolsTable = document.querySelector("#mcp-tools tbody");
const serverChoice = document.getElementById("tools-server");
/** How often the servers and tools are read again (a server connecting or failing changes on its own). */
const REFRESH_MS = 5000;

function restartButton(name) {
  const button = el("button", { type: "button", text: "Restart", "aria-label": `Restart ${name}`, data: { action: "restart", server: name } });
  button.addEventListener("click", () =>
    pressing(button, async () => {
      const answer = await api("POST", `/v1/mcp/servers/${encodeURIComponent(name)}/restart`);
      notice(`restarting ${answer.restarted}`, "info");
      await loadServers();
    }),
  );
  return button;
}

function errorCell(server, stderrOpen) {
  const cell = el("td", { className: "error-text" }, server.last_error || "");
  if (server.stderr) {
    const details = el("details", { data: { server: server.name } }, el("summary", { text: "its stderr" }), el("pre", { text: server.stderr }));
    details.open = stderrOpen;
    cell.append(details);
  }
  return cell;
}

function row(server, stderrOpen) {
  const tools = server.tools || [];
  return el(
    "tr",
    { data: { server: server.name, state: server.state } },
    el("td", { className: "mono", text: server.name }),
    el("td", { text: server.transport || "" }),
    el("td", { className: `state-${server.state}`, data: { field: "state" }, text: server.state }),
    el("td", { title: tools.join(", "), text: String(tools.length) }),
    el("td", { text: String(server.restarts ?? 0) }),
    errorCell(server, stderrOpen),
    can("admin") ? el("td", { className: "actions" }, restartButton(server.name)) : null,
  );
}

/** The focused button's action and server, to give the focus back after the rows are drawn again. */
function focusedKey() {
  const active = document.activeElement;
  return active && table.contains(active) ? [active.dataset.action, active.dataset.server] : null;
}

async function loadServers() {
  const answer = await api("GET", "/v1/mcp/servers");
  const key = focusedKey();
  // A stderr someone opened stays open when the rows are drawn again.
  const opened = new Set([...table.querySelectorAll("details[open]")].map((details) => details.dataset.server));
  table.replaceChildren(...answer.servers.map((server) => row(server, opened.has(server.name))));
  if (key) table.querySelector(`[data-action="${key[0]}"][data-server="${CSS.escape(key[1])}"]`)?.focus();
  empty.hidden = answer.servers.length > 0;
  const names = answer.servers.map((server) => server.name);
  const chosen = serverChoice.value;
  serverChoice.replaceChildren(el("option", { value: "", text: "all" }), ...names.map((name) => el("option", { value: name, text: name })));
  serverChoice.value = names.includes(chosen) ? chosen : "";
  status.textContent = `read at ${new Date().toLocaleTimeString()}`;
}

async function loadTools() {
  const server = serverChoice.value;
  const answer = await api("GET", `/v1/mcp/tools${server ? `?server=${encodeURIComponent(server)}` : ""}`);
  toolsTable.replaceChildren(
    ...answer.tools.map((tool) =>
      el(
        "tr",
        { data: { tool: tool.name } },
        el("td", { className: "mono", text: tool.name }),
        el("td", { text: tool.server }),
        el("td", { className: "mono", text: tool.remote }),
        el("td", { text: tool.asks ? "yes" : "no" }),
        el("td", { text: tool.description || "" }),
      ),
    ),
  );
}

async function refresh() {
  await loadServers();
  await loadTools();
}

document.getElementById("refresh").addEventListener("click", (event) => pressing(event.currentTarget, refresh));
serverChoice.addEventListener("change", () => loadTools().catch((error) => notice(error.message)));
setInterval(() => {
  if (!document.hidden) refresh().catch((error) => (status.textContent = `not read: ${error.message}`));
}, REFRESH_MS);
refresh().catch((error) => notice(error.message));
