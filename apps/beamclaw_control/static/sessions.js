// The sessions page: the conversations the principal's users have (who, agent, last
// active, how much of the context window they use), each one's history, and Delete
// (forget the conversation, as /new does).

import { api, can, el, notice, pressing, when } from "./console.js";

const table = document.querySelector("#sessions tbody");
const total = document.getElementById("sessions-total");
const history = document.getElementById("history");
const historyList = document.getElementById("history-messages");
const historyTitle = document.getElementById("history-title");

function contextCell(item) {
  const used = item.context_used ?? 0;
  const window = item.context_window || 0;
  if (!window) return el("td", { text: String(used) });
  const share = Math.round((100 * used) / window);
  return el(
    "td",
    { className: "context" },
    el("meter", { min: "0", max: String(window), value: String(used), title: `${used} of ${window} tokens` }),
    ` ${share}% (${used.toLocaleString()} / ${window.toLocaleString()})`,
  );
}

function row(item) {
  const id = item.id;
  const showHistory = el("button", { type: "button", className: "quiet", text: "History", data: { action: "history", session: id } });
  showHistory.addEventListener("click", () => pressing(showHistory, () => openHistory(id)));
  const drop = el("button", { type: "button", className: "danger", text: "Delete", data: { action: "delete", session: id } });
  drop.addEventListener("click", () => deleteClicked(drop, id));
  return el(
    "tr",
    { data: { session: id } },
    el("td", { className: "session-id", title: id, text: id.slice(0, 8) }),
    el("td", { text: item.user_id }),
    el("td", { text: item.agent_id }),
    el("td", { text: item.channel || "" }),
    el("td", {}, when(item.last_active), item.running ? el("span", { className: "running", text: " · running" }) : null),
    contextCell(item),
    el("td", { className: "actions" }, showHistory, can("operator") ? drop : null),
  );
}

// Delete asks once more on the same button (no blocking dialog): a second press confirms.
function deleteClicked(button, id) {
  if (button.dataset.action === "delete") {
    button.dataset.action = "confirm-delete";
    button.textContent = "Really delete?";
    return;
  }
  pressing(button, async () => {
    const answer = await api("DELETE", `/v1/sessions/${encodeURIComponent(id)}`);
    notice(`forgot ${answer.dropped} messages of session ${id.slice(0, 8)}`, "info");
    await load();
  });
}

function describe(message) {
  const parts = [];
  if (message.content) parts.push(typeof message.content === "string" ? message.content : JSON.stringify(message.content));
  for (const call of message.tool_calls || []) {
    parts.push(`→ ${call.function?.name}(${call.function?.arguments ?? ""})`);
  }
  return parts.join("\n");
}

async function openHistory(id) {
  const answer = await api("GET", `/v1/sessions/${encodeURIComponent(id)}/history`);
  historyTitle.textContent = `History of ${id.slice(0, 8)}`;
  historyList.replaceChildren(
    ...answer.messages.map((message) =>
      el(
        "li",
        { className: `message ${message.role === "user" ? "user" : "assistant"}` },
        el("span", { className: "speaker", text: message.role + (message.name ? ` ${message.name}` : "") }),
        el("span", { className: "body", text: describe(message) }),
      ),
    ),
  );
  history.hidden = false;
  history.scrollIntoView({ block: "start" });
  document.getElementById("close-history").focus();
}

async function load() {
  try {
    const answer = await api("GET", "/v1/sessions?limit=200");
    table.replaceChildren(...answer.sessions.map(row));
    if (!answer.sessions.length) {
      table.append(el("tr", {}, el("td", { colspan: "7", className: "note", text: "No conversations yet." })));
    }
    total.textContent = `${answer.sessions.length} of ${answer.total}`;
  } catch (error) {
    notice(`the sessions could not be listed: ${error.message}`);
  }
}

if (table) {
  const refresh = document.getElementById("refresh");
  refresh.addEventListener("click", () => pressing(refresh, load));
  document.getElementById("close-history").addEventListener("click", () => {
    history.hidden = true;
  });
  load();
}
