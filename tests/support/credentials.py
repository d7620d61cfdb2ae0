"""A corpus of credentials as users paste them, fresh random values from a seed.

For pushing every credential format through every sink (history, events, logs, A2A
records, API responses) and checking that none survives:

    from tests.support.credentials import credential_corpus, with_variants

    for c in with_variants(credential_corpus(seed=7)):
        if c.register:
            beamclaw_obs.register_secret(c.register)  # a held secret, seen encoded
        ...  # send c.text through the sink
        assert c.secret not in what_came_out, c.name

Each `Credential` is ``name`` (the format, ``/variant`` appended by `with_variants`),
``text`` (what a user or a tool would write, with the credential in it) and
``secret`` (the substring of ``text`` that must not come out). ``register`` is set
only on the ``held-*`` variants: the value the daemon holds as a secret, of which
``secret`` is an encoding; they are redacted only once it is registered.

The values have the real formats' shapes and are random (from ``seed``), so they are
not anybody's keys, and a test that passes does not pass because a value is known.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable, Iterable
from typing import Final

import attrs

ALNUM: Final = string.ascii_letters + string.digits
LOWER_ALNUM: Final = string.ascii_lowercase + string.digits
UPPER_ALNUM: Final = string.ascii_uppercase + string.digits
HEX: Final = "0123456789abcdef"
B64: Final = ALNUM + "+/"
URLSAFE: Final = ALNUM + "-_"

#: The variants `with_variants` makes of each credential.
VARIANTS: Final = ("plain", "json", "tool-call", "held-base64", "held-base64url", "held-hex")


@attrs.frozen
class Credential:
    """One credential in context: ``secret`` is in ``text`` and must not survive scrubbing."""

    name: str
    text: str
    secret: str
    register: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.secret not in self.text:
            raise ValueError(f"{self.name}: the secret is not in the text")


class _Gen:
    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def s(self, alphabet: str, n: int) -> str:
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def digits(self, n: int) -> str:
        return self.r.choice("123456789") + self.s(string.digits, n - 1)

    def password(self) -> str:
        """A password as people choose them: a word, digits, a symbol (not too random)."""
        word = self.r.choice(["hunter", "sunshine", "dragon", "monkey", "letmein", "shadow", "qwerty", "falcon"])
        return word + self.digits(self.r.randint(2, 4)) + self.r.choice("!#%*") + self.s(string.ascii_letters, 3)

    def b64_of(self, n_bytes: int) -> str:
        return base64.b64encode(self.r.randbytes(n_bytes)).decode()

    def pem_body(self, n_bytes: int) -> list[str]:
        body = self.b64_of(n_bytes)
        return [body[i : i + 64] for i in range(0, len(body), 64)]


def _pem(g: _Gen, label: str, n_bytes: int) -> tuple[str, str]:
    lines = g.pem_body(n_bytes)
    block = "\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"])
    return block, lines[len(lines) // 2]


def _pgp(g: _Gen) -> tuple[str, str]:
    lines = g.pem_body(900)
    block = "\n".join(
        [
            "-----BEGIN PGP PRIVATE KEY BLOCK-----",
            "",
            *lines,
            "=" + g.s(B64, 4),
            "-----END PGP PRIVATE KEY BLOCK-----",
        ]
    )
    return block, lines[len(lines) // 2]


def _jwt(g: _Gen) -> str:
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    claims = {"sub": g.digits(10), "name": g.s(string.ascii_letters, 8), "iat": int(g.digits(10))}
    payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    signature = base64.urlsafe_b64encode(g.r.randbytes(32)).decode().rstrip("=")
    return f"{header}.{payload}.{signature}"


# Each maker returns (text, secret).
_Maker = Callable[[_Gen], tuple[str, str]]


def _formats() -> dict[str, _Maker]:
    def t(template: str, secret: str) -> tuple[str, str]:
        return template.format(secret), secret

    def url(g: _Gen, scheme: str, host: str) -> tuple[str, str]:
        user, password = g.s(string.ascii_lowercase, 6), g.s(ALNUM, 16)
        return f"DATABASE_URL={scheme}://{user}:{password}@{host}", password

    def openai_project(g: _Gen) -> tuple[str, str]:
        n = g.r.choice([58, 74])
        return t("export OPENAI_API_KEY={}", f"sk-proj-{g.s(URLSAFE, n)}T3BlbkFJ{g.s(URLSAFE, n)}")

    def anthropic(g: _Gen) -> tuple[str, str]:
        return t("my anthropic key is {}, is it valid?", f"sk-ant-api03-{g.s(URLSAFE, 93)}AA")

    def aws_secret_ini(g: _Gen) -> tuple[str, str]:
        secret = g.s(B64, 40)
        return f"[default]\naws_access_key_id = AKIA{g.s('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567', 16)}\n" + (
            f"aws_secret_access_key = {secret}\n"
        ), secret

    def aws_session(g: _Gen) -> tuple[str, str]:
        return t("AWS_SESSION_TOKEN={}", "IQoJb3JpZ2luX2VjE" + g.s(B64, 300) + "==")

    def azure(g: _Gen) -> tuple[str, str]:
        key = g.b64_of(64)
        return (
            f"DefaultEndpointsProtocol=https;AccountName={g.s(LOWER_ALNUM, 10)};AccountKey={key};"
            "EndpointSuffix=core.windows.net"
        ), key

    def basic_auth(g: _Gen) -> tuple[str, str]:
        token = base64.b64encode(f"{g.s(string.ascii_lowercase, 6)}:{g.password()}".encode()).decode()
        return t("curl https://api.example.test/v1 -H 'Authorization: Basic {}'", token)

    def service_account(g: _Gen) -> tuple[str, str]:
        block, line = _pem(g, "PRIVATE KEY", 1200)
        return json.dumps({"type": "service_account", "private_key": block + "\n"}, indent=2), line

    def discord_bot(g: _Gen) -> tuple[str, str]:
        user = base64.b64encode(g.digits(19).encode()).decode().rstrip("=")
        return t("bot.run('{}')", f"{user}.{g.s(URLSAFE, 6)}.{g.s(URLSAFE, 38)}")

    def sendgrid(g: _Gen) -> tuple[str, str]:
        return t("SENDGRID_API_KEY={}", f"SG.{g.s(URLSAFE, 22)}.{g.s(URLSAFE, 43)}")

    return {
        "openai-project-key": openai_project,
        "openai-legacy-key": lambda g: t("key: {}", f"sk-{g.s(ALNUM, 20)}T3BlbkFJ{g.s(ALNUM, 20)}"),
        "openai-key-without-marker": lambda g: t("The key is {} and it works.", f"sk-proj-{g.s(ALNUM, 32)}"),
        "anthropic-key": anthropic,
        "github-classic-pat": lambda g: t("git clone https://{}@github.com/acme/app.git", f"ghp_{g.s(ALNUM, 36)}"),
        "github-fine-grained-pat": lambda g: t("GH_TOKEN={}", f"github_pat_{g.s(ALNUM, 22)}_{g.s(ALNUM, 59)}"),
        "github-oauth": lambda g: t("token {}", f"gho_{g.s(ALNUM, 36)}"),
        "groq-key": lambda g: t("GROQ_API_KEY={}", f"gsk_{g.s(ALNUM, 52)}"),
        "slack-bot-token": lambda g: t("slack token: {}", f"xoxb-{g.digits(12)}-{g.digits(13)}-{g.s(ALNUM, 24)}"),
        "slack-user-token": lambda g: t(
            "use {} for the user", f"xoxp-{g.digits(12)}-{g.digits(12)}-{g.digits(13)}-{g.s(HEX, 32)}"
        ),
        "slack-webhook": lambda g: t(
            "post to {} please",
            f"https://hooks.slack.com/services/T{g.s(UPPER_ALNUM, 10)}/B{g.s(UPPER_ALNUM, 10)}/{g.s(ALNUM, 24)}",
        ),
        "aws-access-key-id": lambda g: t("AWS_ACCESS_KEY_ID={}", "AKIA" + g.s("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
        "aws-secret-key-env": lambda g: t("AWS_SECRET_ACCESS_KEY={}", g.s(B64, 40)),
        "aws-secret-key-ini": aws_secret_ini,
        "aws-session-token": aws_session,
        "stripe-live-secret": lambda g: t("stripe.api_key = '{}'", f"sk_live_{g.s(ALNUM, 99)}"),
        "stripe-restricted": lambda g: t("Use {}.", f"rk_live_{g.s(ALNUM, 24)}"),
        "google-api-key": lambda g: t("maps key {}", f"AIza{g.s(URLSAFE, 35)}"),
        "telegram-bot-token": lambda g: t("the bot token is {}", f"{g.digits(10)}:AA{g.s(URLSAFE, 33)}"),
        "pgp-private-key": _pgp,
        "pem-rsa-private-key": lambda g: _pem(g, "RSA PRIVATE KEY", 1190),
        "pem-openssh-private-key": lambda g: _pem(g, "OPENSSH PRIVATE KEY", 400),
        "pem-ec-private-key": lambda g: _pem(g, "EC PRIVATE KEY", 120),
        "gcp-service-account-json": service_account,
        "http-basic-auth": basic_auth,
        "bearer-header": lambda g: t("Authorization: Bearer {}", g.s(URLSAFE, 40)),
        "jwt": lambda g: t("the session cookie is {}", _jwt(g)),
        "url-password-https": lambda g: url(g, "https", "git.example.test/repo.git"),
        "url-password-postgres": lambda g: url(g, "postgres", "db.internal:5432/app"),
        "url-password-mongodb-srv": lambda g: url(g, "mongodb+srv", "cluster0.ab1cd.mongodb.net/app"),
        "url-password-redis": lambda g: t("REDIS_URL=redis://:{}@cache:6379/0", g.s(ALNUM, 20)),
        "url-password-mysql": lambda g: url(g, "mysql", "10.0.0.5:3306/shop"),
        "yaml-password": lambda g: t("database:\n  user: app\n  password: {}\n", g.password()),
        "json-api-key": lambda g: t('{{"api_key": "{}", "region": "eu"}}', g.s(ALNUM, 32)),
        "json-client-secret": lambda g: t('{{"client_id": "app", "client_secret": "{}"}}', g.s(URLSAFE, 40)),
        "dotenv-password": lambda g: t("DB_HOST=db\nDB_PASSWORD={}\n", g.password()),
        "huggingface-token": lambda g: t("HF_TOKEN={}", f"hf_{g.s(string.ascii_letters, 34)}"),
        "gitlab-pat": lambda g: t("glab auth login --token {}", f"glpat-{g.s(URLSAFE, 20)}"),
        "npm-token": lambda g: t("//registry.npmjs.org/:_authToken={}", f"npm_{g.s(ALNUM, 36)}"),
        "sendgrid-key": sendgrid,
        "azure-storage-account-key": azure,
        "twilio-api-key": lambda g: t("twilio key {}", f"SK{g.s(HEX, 32)}"),
        "mailgun-key": lambda g: t("MAILGUN_API_KEY={}", f"key-{g.s(HEX, 32)}"),
        "shopify-token": lambda g: t("X-Shopify-Access-Token: {}", f"shpat_{g.s(HEX, 32)}"),
        "digitalocean-pat": lambda g: t("doctl auth init -t {}", f"dop_v1_{g.s(HEX, 64)}"),
        "discord-bot-token": discord_bot,
        "pypi-token": lambda g: t("password = {}", f"pypi-AgEIcHlwaS5vcmc{g.s(URLSAFE, 120)}"),
        "dockerhub-pat": lambda g: t("docker login -u me -p {}", f"dckr_pat_{g.s(URLSAFE, 27)}"),
        "doppler-token": lambda g: t("DOPPLER_TOKEN={}", f"dp.pt.{g.s(ALNUM, 43)}"),
        "linear-key": lambda g: t("linear: {}", f"lin_api_{g.s(ALNUM, 40)}"),
        "databricks-token": lambda g: t("DATABRICKS_TOKEN={}", f"dapi{g.s(HEX, 32)}"),
        "heroku-key": lambda g: t("HEROKU_API_KEY={}", f"HRKU-AA{g.s(URLSAFE, 58)}"),
        "curl-user-password": lambda g: t("curl -u admin:{} https://ci.example.test", g.s(ALNUM, 14)),
        "age-secret-key": lambda g: t("{}", "AGE-SECRET-KEY-1" + g.s("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L".upper(), 58)),
        "vault-token": lambda g: t("VAULT_TOKEN={}", f"hvs.{g.s(URLSAFE, 95)}"),
    }


#: The names of the formats `credential_corpus` makes, in order.
FORMATS: Final = tuple(_formats())


def credential_corpus(seed: int = 0) -> list[Credential]:
    """One `Credential` per format in `FORMATS`, with fresh values drawn from *seed*."""
    g = _Gen(seed)
    return [Credential(name, *make(g)) for name, make in _formats().items()]


def _escaped(text: str) -> str:
    return json.dumps(text)[1:-1]


def variant(credential: Credential, kind: str, seed: int = 0) -> Credential:
    """*credential* as *kind* (one of `VARIANTS`) would carry it.

    ``json``: its text inside a JSON string (a stored message). ``tool-call``: inside
    a tool call's JSON ``arguments``, itself inside a JSON message: escaped twice.
    ``held-*``: the secret as a held value, base64- (at a random alignment inside a
    longer base64 run) or hex-encoded; redacted only after ``register_secret(register)``.
    """
    name = f"{credential.name}/{kind}"
    text, secret = credential.text, credential.secret
    if kind == "plain":
        return attrs.evolve(credential, name=name)
    if kind == "json":
        wrapped = json.dumps({"role": "user", "content": f"here:\n{text}\nthanks"})
        return Credential(name, wrapped, _escaped(secret))
    if kind == "tool-call":
        arguments = json.dumps({"command": f"cat <<'EOF' > .env\n{text}\nEOF"})
        call = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": arguments}}
        return Credential(name, json.dumps({"role": "assistant", "tool_calls": [call]}), _escaped(_escaped(secret)))
    r = random.Random(f"{seed}/{credential.name}/{kind}")
    raw = secret.encode()
    before, after = r.randbytes(r.randint(0, 5)), r.randbytes(r.randint(0, 5))
    if kind == "held-hex":
        encoded = raw.hex() if r.random() < 0.5 else raw.hex().upper()
        return Credential(name, f"xxd -p: {before.hex()}{encoded}{after.hex()}", encoded, register=secret)
    encode = base64.b64encode if kind == "held-base64" else base64.urlsafe_b64encode
    whole = encode(before + raw + after).decode()
    core = encode(bytes(len(before)) + raw).decode()[-(-8 * len(before) // 6) : 8 * (len(before) + len(raw)) // 6]
    if kind not in ("held-base64", "held-base64url"):
        raise ValueError(f"unknown variant {kind!r}")
    return Credential(name, f"echo {whole} | base64 -d", core, register=secret)


def with_variants(corpus: Iterable[Credential], kinds: Iterable[str] = VARIANTS, seed: int = 0) -> list[Credential]:
    """Every credential of *corpus* in every variant of *kinds* (see `variant`)."""
    kinds = tuple(kinds)
    return [variant(c, kind, seed) for c in corpus for kind in kinds]
