"""The CLI commands that work on disk: agent, skills, pair, doctor."""

from __future__ import annotations

import contextlib
import datetime
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import beamclaw_core as core
from beamclaw_base import Database, StoreConfig
from beamclaw_cli import main
from beamclaw_core._store_requests import AppendMessages
from tests.support.stores import sql


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("BEAMCLAW_HOME", str(path))
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out + out.err


def test_rehatch_is_a_factory_reset_with_a_dated_backup(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "agent", "create", "ada")
    ada = home / "agents" / "ada"
    written = {name: f"ada's own {name}\n" for name in core.SEEDED_FILES}
    for name, text in written.items():
        (ada / name).write_text(text)
    (ada / "memory" / "2026-11-20.md").write_text("- met Bob\n")
    (ada / "notes.txt").write_text("not a bootstrap file")
    own = core.user_workspace(home, "ada", "tg:42", single_user=False)
    own.write("MEMORY.md", "tg:42 likes tea")

    code, out = run(capsys, "agent", "rehatch", "ada")
    assert code == 0 and "memory kept" in out
    for name in core.SEEDED_FILES:
        expected = written[name] if name == "MEMORY.md" else core.template(name)
        assert (ada / name).read_text() == expected, name
    assert (ada / "memory" / "2026-11-20.md").exists() and (ada / "notes.txt").exists()
    assert own.read("MEMORY.md") == "tg:42 likes tea"
    (first,) = (home / "backups" / "agents" / "ada").iterdir()
    assert f"the old files are in {first}" in out and first.name.startswith(f"{datetime.date.today():%Y}-")
    assert {p.name: p.read_text() for p in first.iterdir()} == {n: t for n, t in written.items() if n != "MEMORY.md"}

    code, out = run(capsys, "agent", "rehatch", "ada", "--memory")
    assert code == 0 and "memory reset too" in out
    assert (ada / "MEMORY.md").read_text() == core.template("MEMORY.md")
    assert list((ada / "memory").iterdir()) == [] and not (home / "users" / "ada").exists()
    second = max((home / "backups" / "agents" / "ada").iterdir())
    assert (second / "MEMORY.md").read_text() == written["MEMORY.md"]
    assert (second / "memory" / "2026-11-20.md").read_text() == "- met Bob\n"
    assert (second / "users" / own.root.name / "MEMORY.md").read_text() == "tg:42 likes tea"
    assert run(capsys, "agent", "rehatch", "bob") == (
        1,
        "beamclaw: there is no agent 'bob' (create it with `beamclaw agent create bob`)\n",
    )


def _rows(table: str) -> list[list[str]]:
    return [line.split() for line in table.splitlines()]


def test_agent_lifecycle(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "agent", "create", "ada")
    assert code == 0 and "created IDENTITY.md" in out
    (home / "agents" / "ada" / "IDENTITY.md").write_text("- Name: Ada\n")
    assert run(capsys, "agent", "create", "ada")[1].endswith("every file was already there; nothing changed\n")
    assert _rows(run(capsys, "agent", "list")[1]) == [["AGENT", "FIRST-RUN", "RITUAL"], ["ada", "pending"]]
    code, out = run(capsys, "agent", "show", "ada")
    assert code == 0 and "name          Ada" in out and "BOOTSTRAP.md" in out
    (home / "agents" / "ada" / "IDENTITY.md").write_text("- Name:\n- Vibe: calm\n")
    code, out = run(capsys, "agent", "show", "ada")
    assert code == 0 and out.splitlines()[-1] == "  name          not chosen yet (IDENTITY.md)"
    (home / "agents" / "ada" / "IDENTITY.md").write_text("- Name: Ada\n")
    core.Workspace.of(home, "ada").write("BOOTSTRAP.md", "")
    assert _rows(run(capsys, "agent", "list")[1]) == [["AGENT", "FIRST-RUN", "RITUAL"], ["ada", "done"]]
    assert "back to their templates" in run(capsys, "agent", "rehatch", "ada")[1]
    code, out = run(capsys, "agent", "delete", "ada")
    assert code == 1 and "--yes" in out and (home / "agents" / "ada").exists()
    assert run(capsys, "agent", "delete", "ada", "--yes")[0] == 0 and not (home / "agents" / "ada").exists()
    code, out = run(capsys, "agent", "create", "../evil")
    assert code == 2 and "invalid agent name" in out and not (home.parent / "evil").exists()


def test_skills_commands(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = home / "skills" / "needs-thing"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: needs-thing\ndescription: Needs a program\nmetadata:\n  requires:\n    bins: [no-such-bin-x]\n"
        "  install:\n    - kind: shell\n      command: touch installed-marker\n---\nUse it.\n"
    )
    code, out = run(capsys, "skills", "list")
    rows = _rows(out)
    assert (
        code == 0
        and rows[1][:4] == ["✓", "📜", "git-digest", "bundled"]
        and ["✗", "needs-thing", "home"] in [row[:3] for row in rows]
    )
    out = run(capsys, "skills", "status")[1]
    assert "needs-thing: needs the program 'no-such-bin-x', which is not on PATH" in out
    out = run(capsys, "skills", "show", "git-digest")[1]
    assert "install: apt-get install -y git" in out and "digest.sh" in out
    code, out = run(capsys, "skills", "install", "needs-thing")
    assert code == 1 and "touch installed-marker" in out and "Nothing was run" in out
    assert not Path("installed-marker").exists()
    assert run(capsys, "skills", "show", "nope")[0] == 1
    marker = home / "installed-marker"
    text = (folder / "SKILL.md").read_text().replace("touch installed-marker", f"touch {marker}")
    (folder / "SKILL.md").write_text(text)
    code, out = run(capsys, "skills", "install", "needs-thing", "--yes")
    assert code == 0 and f"$ touch {marker}" in out and marker.exists()


def test_pairing_commands(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home.mkdir()
    db = core.open_session_store(StoreConfig(), home)
    code_text = db.transact(lambda tx: core.request_code(tx, "telegram", "tg:42", "Ada L."))
    out = run(capsys, "pair")[1]
    assert ["telegram", code_text, "tg:42", "Ada", "L.", "59", "min"] in _rows(out) and "nobody paired yet" in out
    code, out = run(capsys, "pair", "telegram", code_text, "--agent", "ada")  # a typo must not make an agent
    assert code == 1 and "there is no agent 'ada' (agents: default); create it with `beamclaw agent create ada`" in out
    assert not (home / "agents" / "ada").exists() and _allowed(db, "tg:42") is None
    run(capsys, "agent", "create", "ada")
    code, out = run(capsys, "pair", "telegram", code_text, "--agent", "ada")
    assert code == 0 and out == "paired tg:42 on telegram with agent ada\n"
    assert _allowed(db, "tg:42") == "ada"
    code, out = run(capsys, "pair", "telegram", "WRONG234")
    assert code == 1 and "no pending telegram pairing code 'WRONG234'" in out
    code, out = run(capsys, "pair", "link", "telegram", "tg:42", "local:ada\x1b[2J")
    assert code == 1 and "a user id must be printable" in out
    code, out = run(capsys, "pair", "link", "telegram", "tg:9", "local:ada")
    assert code == 1 and "tg:9 is not paired on telegram: pair them first" in out
    code, out = run(capsys, "pair", "link", "telegram", "tg:42", "local:ada")
    assert code == 0 and out == "tg:42 on telegram now speaks as local:ada\n"
    assert ["telegram", "tg:42", "local:ada", "ada"] in _rows(run(capsys, "pair", "list")[1])
    assert json.loads(run(capsys, "pair", "--json")[1])["paired"][0]["linked_user"] == "local:ada"
    assert run(capsys, "pair", "unlink", "telegram", "tg:42") == (0, "tg:42 on telegram speaks as themselves\n")
    assert run(capsys, "pair", "unlink", "telegram", "tg:42") == (1, "tg:42 was not linked\n")
    assert run(capsys, "pair", "revoke", "telegram", "tg:42")[0] == 0
    assert _allowed(db, "tg:42") is None
    db.close()


def _allowed(db: Database, user_id: str) -> str | None:
    return db.transact(lambda tx: core.allowed_agent(tx, "telegram", user_id), write=False)


def _converse(db: Database, session_id: str, agent: str) -> None:
    said = [core.Message("user", "hi"), core.Message("assistant", "hello")]
    db.transact(AppendMessages(core.SessionInfo(session_id, "local:bob", agent), frozenset(), 0, said).run)


def test_agent_delete_deletes_its_conversations_and_only_its(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "agent", "create", "ada")
    with _store(home) as db:
        _converse(db, "s-ada", "ada")
        _converse(db, "s-default", "default")
    assert run(capsys, "agent", "delete", "ada", "--yes") == (0, "deleted agent ada\n")
    with _store(home) as db:
        assert sql(db, "SELECT id FROM sessions") == [("s-default",)]
        assert sql(db, "SELECT DISTINCT session_id FROM messages") == [("s-default",)]


def test_agent_delete_that_fails_half_way_deletes_nothing(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The messages go first, then the conversations: when the second fails, the first is
    undone and the workspace is kept, so the command can simply be run again."""
    run(capsys, "agent", "create", "ada")
    with _store(home) as db:
        _converse(db, "s-ada", "ada")
        sql(db, "CREATE TRIGGER keep BEFORE DELETE ON sessions BEGIN SELECT RAISE(ABORT, 'kept by a trigger'); END")
    code, out = run(capsys, "agent", "delete", "ada", "--yes")
    assert code == 2 and "kept by a trigger" in out
    assert (home / "agents" / "ada" / "IDENTITY.md").exists()
    with _store(home) as db:
        assert sql(db, "SELECT count(*) FROM messages WHERE session_id = 's-ada'") == [(2,)]


@contextlib.contextmanager
def _store(home: Path) -> Iterator[Database]:
    db = core.open_session_store(StoreConfig(), home)
    try:
        yield db
    finally:
        db.close()


def test_doctor_names_each_fix(home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    code, out = run(capsys, "doctor")
    assert code == 1
    assert f"fix: chmod 700 {home}" in out
    assert "provider 'openrouter': OPENROUTER_API_KEY is not set\n    fix: export OPENROUTER_API_KEY=..." in out
    assert "no daemon is running\n    fix: python -m beamclaw run --config " in out
    home.chmod(0o700)
    assert f"data dir {home} is private" in run(capsys, "doctor")[1]


def test_doctor_checks_the_jail_commands_will_run_in(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test-1234567890")
    config = tmp_path / "my.toml"
    config.write_text('[sandbox.bubblewrap]\nbwrap = "/nonexistent/bwrap"\n')
    code, out = run(capsys, "doctor", "--config", str(config))
    assert code == 1 and "✗ the bubblewrap jail does not work" in out and "fix: apt-get install bubblewrap" in out
    assert "Docker" not in out  # nothing uses it
    config.write_text('[tools.bash]\nisolation = "none"\n[tools.terminal]\nisolation = "none"\n')
    code, out = run(capsys, "doctor", "--config", str(config))
    assert "! bash or terminal runs commands unjailed" in out and "bubblewrap jail" not in out
    config.write_text("[sandbox]\nenabled = true\n")
    assert "Docker" in run(capsys, "doctor", "--config", str(config))[1]


def test_doctor_names_a_data_dir_that_is_a_file(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home.parent.mkdir(parents=True, exist_ok=True)
    home.write_text("")
    code, out = run(capsys, "doctor")
    assert code == 1 and "Traceback" not in out
    assert (
        f"✗ the data dir {home} (BEAMCLAW_HOME) is not a directory\n    fix: point BEAMCLAW_HOME at a directory" in out
    )
    code, out = run(capsys, "agent", "create", "ada")
    assert code == 2 and out.startswith(f"beamclaw: the data dir {home} (BEAMCLAW_HOME) is not a directory")


def test_every_command_and_action_has_a_description_and_an_example() -> None:
    import argparse

    from beamclaw_cli._main import _parser

    def commands(parser: argparse.ArgumentParser, path: str) -> list[tuple[str, argparse.ArgumentParser]]:
        found = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found += [(f"{path} {name}", sub), *commands(sub, f"{path} {name}")]
        return found

    every = commands(_parser(), "beamclaw")
    assert len(every) >= 30
    for path, parser in every:
        assert parser.description and len(parser.description) > 20, path
        assert parser.epilog and parser.epilog.startswith("examples:\n  ") and "beamclaw " in parser.epilog, path


def test_a_bad_beamclaw_user_is_named_before_anything_runs(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BEAMCLAW_USER", "ada\x1b[2J")
    refused = "beamclaw: BEAMCLAW_USER is refused: a user id must be printable"
    for argv, status in ((["chat", "hi"], 1), (["run"], 2)):  # the terminal's user, and the daemon's
        code, out = run(capsys, *argv)
        assert code == status and out.startswith(refused)
