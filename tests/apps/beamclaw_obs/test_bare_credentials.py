"""Every credential format with a recognisable prefix is redacted bare, in prose, not only
as NAME=value; ids and hashes that merely look random are left alone.

The credentials are drawn at random from a seed by `tests.support.credentials` (only
their prefixes are written there), so no token-shaped string sits in this repository.
"""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from pathlib import Path

import pytest
import trio
from loguru import logger

import beamclaw_obs as obs
import supervision as sv
from beamclaw_obs import REDACTED, StreamScrubber, scrub
from beamclaw_obs._detector import default_rules
from tests.support.credentials import BARE_CONTEXTS, BARE_RULES, bare_corpus, bare_secrets, variant

SEEDS = (0, 1, 2)

#: gitleaks' rules that find a secret only after a name (``algolia_key = ...``): the
#: secret alone is hex, base64 or a UUID, which ids and hashes are too. As gitleaks
#: does, these need the name.
_AFTER_A_NAME = {
    *("adafruit-api-key", "adobe-client-id", "airtable-api-key", "algolia-api-key", "alibaba-secret-key"),
    *("asana-client-id", "asana-client-secret", "bitbucket-client-id", "bitbucket-client-secret"),
    *("bittrex-access-key", "bittrex-secret-key", "cisco-meraki-api-key", "cloudflare-api-key"),
    *("cloudflare-global-api-key", "codecov-access-token", "cohere-api-token", "coinbase-access-token"),
    *("confluent-access-token", "confluent-secret-key", "contentful-delivery-api-token", "datadog-access-token"),
    *("discord-api-token", "discord-client-id", "discord-client-secret", "droneci-access-token"),
    *("dropbox-api-token", "etsy-access-token", "facebook-secret", "fastly-api-token", "finicity-api-token"),
    *("finicity-client-secret", "finnhub-access-token", "flickr-access-token", "freshbooks-access-token"),
    *("generic-api-key", "gitter-access-token", "hashicorp-tf-password", "heroku-api-key", "hubspot-api-key"),
    *("intercom-api-key", "jfrog-api-key", "jfrog-identity-token", "kraken-access-token", "kucoin-access-token"),
    *("kucoin-secret-key", "launchdarkly-access-token", "linear-client-secret", "linkedin-client-id"),
    *("linkedin-client-secret", "looker-client-id", "looker-client-secret", "mailgun-signing-key"),
    *("mattermost-access-token", "messagebird-api-token", "messagebird-client-id", "netlify-access-token"),
    *("new-relic-user-api-id", "nytimes-access-token", "plaid-client-id", "plaid-secret-key"),
    *("privateai-api-token", "rapidapi-access-token", "sendbird-access-id", "sendbird-access-token"),
    *("sentry-access-token", "sidekiq-secret", "snyk-api-token", "squarespace-access-token"),
    *("sumologic-access-token", "travisci-access-token", "twitch-api-token", "twitter-access-secret"),
    *("twitter-access-token", "twitter-api-key", "twitter-api-secret", "zendesk-secret-key"),
    # A prefix, but too short or too common to tell a key from an id or a name:
    # okta 00..., beamer b_..., sumologic su..., freemius sk_ and any 29 non-blanks,
    # Mailgun's older key- and 32 hex (also "cache key-" and an MD5).
    *("okta-access-token", "beamer-api-token", "sumologic-access-id", "freemius-secret-key"),
    "mailgun-private-api-token",
}

#: Rules that find a credential by the structure around it, wherever it stands
#: (tests/support/credentials.py plants each of them in its usual setting).
_BY_STRUCTURE = {
    *("curl-auth-header", "curl-auth-user-each", "kubernetes-secret-yaml", "nuget-config-password"),
    *("private-key", "private-key-unterminated", "sidekiq-sensitive-url", "url-password"),
    *("http-basic-credentials", "user-password-flag", "azure-connection-string-key", "aws-secret-or-session"),
    *("password-assignment", "credential-assignment", "telegram-bot-api-token", "discord-bot-token-bare"),
}


def _bare_copy_of(rule_id: str) -> set[str]:
    """The formats a ``-bare`` rule of ours finds: the gitleaks rule(s) it copies."""
    base = rule_id.removesuffix("-bare")
    return {name for name in BARE_RULES if name == base or name.startswith(base.removesuffix("-key") + "-")}


def test_every_rule_is_planted_bare_or_needs_a_name_for_a_reason() -> None:
    ids = {rule.id for rule in default_rules().rules}
    copies = {rule_id for rule_id in ids if rule_id.endswith("-bare") and rule_id not in _BY_STRUCTURE}
    assert {rule_id for rule_id in copies if not _bare_copy_of(rule_id)} == set()
    assert set(BARE_RULES) <= ids
    assert ids - set(BARE_RULES) - copies - _AFTER_A_NAME - _BY_STRUCTURE == set()
    assert set(BARE_RULES) & _AFTER_A_NAME == set()


def _secret(credential: str) -> str:
    """What must not come out: for a Bearer header, the token after the word."""
    return credential.removeprefix("Bearer ")


@pytest.mark.parametrize("name", BARE_RULES)
def test_a_prefixed_credential_is_redacted_bare(name: str) -> None:
    for seed in SEEDS:
        credential = bare_secrets(seed)[name]
        for context in BARE_CONTEXTS:
            out = scrub(context.format(credential))
            assert _secret(credential) not in out, (seed, context)
            assert REDACTED in out


@pytest.mark.parametrize("kind", ["json", "tool-call"])
def test_a_bare_credential_json_escaped_once_or_twice_is_redacted(kind: str) -> None:
    planted = [variant(c, kind, seed) for seed in SEEDS for c in bare_corpus(seed)]
    assert [c.name for c in planted if c.secret in scrub(c.text)] == []


def _ordinary(seed: int) -> list[str]:
    r = random.Random(seed)
    sha1 = hashlib.sha1(r.randbytes(8)).hexdigest()
    md5 = hashlib.md5(r.randbytes(8)).hexdigest()
    sha256 = hashlib.sha256(r.randbytes(8)).hexdigest()
    an_id = uuid.UUID(int=r.getrandbits(128), version=4)
    return [
        f"task {an_id} is done",
        f"commit {sha1}.",
        f"merged {sha1[:7]} and {sha1[:12]}",
        f"sha256:{sha256}",
        f"md5 {md5}",
        f"the job task-sk-{md5} finished",
        f"worker-task-sk-{an_id} started",
        f"cache key-{md5} expired",
        "live_migration_of_the_database_is_enabled_now",
        "YC_DEFAULT_REGION_NAME_FOR_THE_WHOLE_CLUSTER_X",
        "pattern matching; the path is /tmp/x; a pat on the back",
        "test_the_scrubber_leaves_ordinary_names_alone",
        "| name | value |\n| --- | --- |\n| 100% | 5 |",
        "sk-learn-style-names and risk-assessment-sk-notes",
    ]


@pytest.mark.parametrize("seed", SEEDS)
def test_ids_hashes_and_names_survive(seed: int) -> None:
    for text in _ordinary(seed):
        assert scrub(text) == text


def test_an_sk_key_alone_goes_but_sk_inside_a_dashed_name_stays() -> None:
    key = bare_secrets(5)["sk-dash-key"]
    assert scrub(f"the key {key}.") == f"the key {REDACTED}."
    assert scrub(f"job task-{key} ran") == f"job task-{key} ran"  # the trade-off: a name, kept


def _stream(text: str, cuts: list[int]) -> str:
    scrubber = StreamScrubber()
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    return "".join(scrubber.feed(piece) for piece in pieces) + scrubber.flush()


@pytest.mark.parametrize("name", BARE_RULES)
def test_a_bare_credential_split_across_chunks_is_caught(name: str) -> None:
    credential = bare_secrets(7)[name]
    before, after = "words before it " * 30, " and words after it" * 30
    text = f"{before}{credential}{after}"
    for inside in (1, 4, len(credential) // 2, len(credential) - 1):
        out = _stream(text, [len(before) + inside])
        assert _secret(credential) not in out, inside
        assert out == scrub(text)
    out = _stream(text, list(range(7, len(text), 7)))
    assert _secret(credential) not in out and out == scrub(text)


class _Collect(obs.Backend):
    def setup(self, sink: list[obs.ObsEvent]) -> list[obs.ObsEvent]:
        return sink

    def handle_event(self, event: obs.ObsEvent, sink: list[obs.ObsEvent]) -> None:
        sink.append(event)


async def test_no_bare_credential_reaches_the_log_file_or_a_backend(tmp_path: Path) -> None:
    credentials = bare_secrets(8)
    sink: list[obs.ObsEvent] = []
    tree = obs.supervision_tree({"log_level": "DEBUG"}, tmp_path)
    supervisor = sv.Supervisor([*tree.children, sv.ChildSpec("collect", _Collect.start, args=(sink,))], name="obs")
    async with sv.open_supervisor(supervisor):
        for name, credential in credentials.items():
            obs.emit("tool_call_result", tool="bash", result=f"{name}: {credential}.")
            logger.info("the model said: {}", f"here it is ({credential})")
        await trio.testing.wait_all_tasks_blocked()
    log = (tmp_path / "logs" / "beamclaw.log").read_text()
    lines = [json.loads(line)["text"] for line in log.splitlines()]
    assert sum("tool_call_result" in line for line in lines) == len(credentials)
    assert sum("the model said" in line for line in lines) == len(credentials)
    events = json.dumps([e.data for e in sink if e.name == "tool_call_result"])
    assert len(sink) >= len(credentials)
    leaks = [name for name, credential in credentials.items() if _secret(credential) in log + events]
    assert leaks == []
