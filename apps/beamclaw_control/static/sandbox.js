// The sandbox page (an admin's: the template shows others a note): the Docker containers
// of this data dir (GET /v1/sandbox), each with Kill (POST /v1/sandbox/<id>/kill).

import { api, el, notice, pressing, when } from "./console.js";

const table = document.querySelector("#sandboxes tbody");
const empty = document.getElementById("sandbox-empty");
const status = document.getElementById("sandbox-status");

function killButton(name) {
  const button = el("button", { type: "button", className: "danger", text: "Kill", "aria-label": `Kill ${name}`, data: { action: "kill", sandbox: name } });
  button.addEventListener("click", () => {
    // What ran in the container is lost: Kill asks once more on the same button.
    if (button.dataset.action === "kill") {
      button.dataset.action = "confirm-kill";
      button.textContent = "Really kill?";
      return;
    }
    pressing(button, async () => {
      const answer = await api("POST", `/v1/sandbox/${encodeURIComponent(name)}/kill`);
      notice(`removed ${answer.container}`, "info");
      await load();
    });
  });
  return button;
}

function row(sandbox) {
  return el(
    "tr",
    { data: { sandbox: sandbox.name } },
    el("td", { className: "mono", text: sandbox.name }),
    el("td", { className: "mono", text: sandbox.key || "" }),
    el("td", { text: sandbox.status || "" }),
    el("td", { text: when(sandbox.created) }),
    el("td", { className: "actions" }, killButton(sandbox.name)),
  );
}

async function load() {
  const answer = await api("GET", "/v1/sandbox");
  table.replaceChildren(...answer.sandboxes.map(row));
  empty.hidden = answer.sandboxes.length > 0;
  status.textContent = `read at ${new Date().toLocaleTimeString()}`;
}

document.getElementById("refresh").addEventListener("click", (event) => pressing(event.currentTarget, load));
load().catch((error) => notice(error.message));
