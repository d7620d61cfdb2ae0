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

`bare_corpus` is the other half: each format with a recognisable prefix (the spec's
``sk-``, ``gsk_``, ``ghp_``, Bearer, and gitleaks' prefixed rules, `BARE_RULES`), bare
in a sentence, with no variable name before it. Only the prefixes are written in this
file, so no token-shaped string sits in the repository for a scanner to flag.
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
        # The rest of the spec's list, NAME=value inside a sentence or a URL.
        "api-key-in-query": lambda g: t("GET https://api.example.test/v1/items?api_key={}&page=2", g.s(ALNUM, 32)),
        "token-inline": lambda g: t("run it with token={} and see", g.s(URLSAFE, 32)),
        "password-inline": lambda g: t("log in with password={}, user admin", g.password()),
        "secret-inline": lambda g: t("secret={}", g.s(ALNUM, 24)),
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


def _bare_secrets() -> dict[str, Callable[[_Gen], str]]:
    """Each credential format with a recognisable prefix (or shape), by the rule that
    finds it: the spec's list and gitleaks' prefixed rules. Only the prefix is written
    here; the rest is drawn at random, so no token-shaped string sits in the repository."""

    def s(alphabet: str, n: int) -> Callable[[_Gen], str]:
        return lambda g: g.s(alphabet, n)

    def cat(*parts: str | Callable[[_Gen], str]) -> Callable[[_Gen], str]:
        return lambda g: "".join(p if isinstance(p, str) else p(g) for p in parts)

    def digits(n: int) -> Callable[[_Gen], str]:
        return lambda g: g.digits(n)

    a_to_h = "abcdefgh0123456789"
    uuid = cat(s(HEX, 8), "-", s(HEX, 4), "-", s(HEX, 4), "-", s(HEX, 4), "-", s(HEX, 12))
    jwt = _jwt
    return {
        # The spec's list (api_key=, token=, password=, secret= are names: see _formats).
        "sk-dash-key": cat("sk-", s(ALNUM, 48)),
        "groq-api-key": cat("gsk_", s(ALNUM, 52)),
        "github-pat": cat("ghp_", s(ALNUM, 36)),
        "bearer-token": cat("Bearer ", s(URLSAFE, 40)),
        # gitleaks' rules that match a prefix wherever it is.
        "1password-secret-key": cat(
            "A3-",
            s(UPPER_ALNUM, 6),
            "-",
            s(UPPER_ALNUM, 11),
            "-",
            s(UPPER_ALNUM, 5),
            "-",
            s(UPPER_ALNUM, 5),
            "-",
            s(UPPER_ALNUM, 5),
        ),
        "1password-service-account-token": cat("ops_eyJ", s(ALNUM, 260)),
        "adobe-client-secret": cat("p8e-", s(LOWER_ALNUM, 32)),
        "airtable-personnal-access-token": cat("pat", s(ALNUM, 14), ".", s(HEX, 64)),
        "alibaba-access-key-id": cat("LTAI", s(LOWER_ALNUM, 20)),
        "anthropic-admin-api-key": cat("sk-ant-admin01-", s(URLSAFE, 93), "AA"),
        "anthropic-api-key": cat("sk-ant-api03-", s(URLSAFE, 93), "AA"),
        "artifactory-api-key": cat("AKCp", s(ALNUM, 69)),
        "artifactory-reference-token": cat("cmVmd", s(ALNUM, 59)),
        "atlassian-api-token": cat("ATATT3", s(URLSAFE, 186)),
        "authress-service-client-access-key": cat(
            "sc_", s(LOWER_ALNUM, 12), ".", s(LOWER_ALNUM, 5), ".acc_", s(LOWER_ALNUM, 20), ".", s(ALNUM, 40)
        ),
        "aws-access-token": cat("AKIA", s("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
        "aws-amazon-bedrock-api-key-long-lived": cat("ABSK", s(B64, 140)),
        "aws-amazon-bedrock-api-key-short-lived": cat(
            "bedrock-api-key-", "YmVkcm9jay5hbWF6b25hd3MuY29t", s(ALNUM, 200)
        ),
        "azure-ad-client-secret": cat(s(ALNUM, 3), digits(1), "Q~", s(ALNUM, 32)),
        "clickhouse-cloud-api-secret-key": cat("4b1d", s(ALNUM, 38)),
        "clojars-api-token": cat("CLOJARS_", s(LOWER_ALNUM, 60)),
        "cloudflare-origin-ca-key": cat("v1.0-", s(HEX, 24), "-", s(HEX, 146)),
        "databricks-api-token": cat("dapi", s(HEX, 32)),
        "digitalocean-access-token": cat("doo_v1_", s(HEX, 64)),
        "digitalocean-pat": cat("dop_v1_", s(HEX, 64)),
        "digitalocean-refresh-token": cat("dor_v1_", s(HEX, 64)),
        "doppler-api-token": cat("dp.pt.", s(ALNUM, 43)),
        "duffel-api-token": cat("duffel_live_", s(URLSAFE, 43)),
        "dynatrace-api-token": cat("dt0c01.", s(UPPER_ALNUM, 24), ".", s(UPPER_ALNUM, 64)),
        "easypost-api-token": cat("EZAK", s(ALNUM, 54)),
        "easypost-test-api-token": cat("EZTK", s(ALNUM, 54)),
        "facebook-access-token": cat(digits(16), "|", s(URLSAFE, 32)),
        "facebook-page-access-token": cat("EAAC", s(ALNUM, 120)),
        "flutterwave-encryption-key": cat("FLWSECK_TEST-", s(a_to_h, 12)),
        "flutterwave-public-key": cat("FLWPUBK_TEST-", s(a_to_h, 32), "-X"),
        "flutterwave-secret-key": cat("FLWSECK_TEST-", s(a_to_h, 32), "-X"),
        "flyio-access-token": cat("fm2_", s(B64, 120)),
        "frameio-api-token": cat("fio-u-", s(URLSAFE, 64)),
        "gcp-api-key": cat("AIza", s(URLSAFE, 35)),
        "github-app-token": cat("ghs_", s(ALNUM, 36)),
        "github-fine-grained-pat": cat("github_pat_", s(ALNUM, 22), "_", s(ALNUM, 59)),
        "github-oauth": cat("gho_", s(ALNUM, 36)),
        "github-refresh-token": cat("ghr_", s(ALNUM, 36)),
        "gitlab-cicd-job-token": cat("glcbt-", s(ALNUM, 3), "_", s(URLSAFE, 20)),
        "gitlab-deploy-token": cat("gldt-", s(URLSAFE, 20)),
        "gitlab-feature-flag-client-token": cat("glffct-", s(URLSAFE, 20)),
        "gitlab-feed-token": cat("glft-", s(URLSAFE, 20)),
        "gitlab-incoming-mail-token": cat("glimt-", s(URLSAFE, 25)),
        "gitlab-kubernetes-agent-token": cat("glagent-", s(URLSAFE, 50)),
        "gitlab-oauth-app-secret": cat("gloas-", s(URLSAFE, 64)),
        "gitlab-pat": cat("glpat-", s(URLSAFE, 20)),
        "gitlab-pat-routable": cat("glpat-", s(ALNUM, 30), ".01", s(LOWER_ALNUM, 7)),
        "gitlab-ptt": cat("glptt-", s(HEX, 40)),
        "gitlab-rrt": cat("GR1348941", s(URLSAFE, 20)),
        "gitlab-runner-authentication-token": cat("glrt-", s(URLSAFE, 20)),
        "gitlab-runner-authentication-token-routable": cat("glrt-t1_", s(ALNUM, 30), ".01", s(LOWER_ALNUM, 7)),
        "gitlab-scim-token": cat("glsoat-", s(URLSAFE, 20)),
        "gitlab-session-cookie": cat("_gitlab_session=", s(LOWER_ALNUM, 32)),
        "grafana-api-key": cat("eyJrIjoi", s(ALNUM, 80)),
        "grafana-cloud-api-token": cat("glc_", s(ALNUM, 40)),
        "grafana-service-account-token": cat("glsa_", s(ALNUM, 32), "_", s(HEX, 8)),
        "harness-api-key": cat("pat.", s(URLSAFE, 22), ".", s(ALNUM, 24), ".", s(ALNUM, 20)),
        "hashicorp-tf-api-token": cat(s(LOWER_ALNUM, 14), ".atlasv1.", s(URLSAFE, 64)),
        "heroku-api-key-v2": cat("HRKU-AA", s(URLSAFE, 58)),
        "huggingface-access-token": cat("hf_", s(string.ascii_letters, 34)),
        "huggingface-organization-api-token": cat("api_org_", s(string.ascii_letters, 34)),
        "infracost-api-token": cat("ico-", s(ALNUM, 32)),
        "intra42-client-secret": cat("s-s4t2ud-", s(HEX, 64)),
        "jwt": jwt,
        "jwt-base64": lambda g: base64.b64encode(_jwt(g).encode()).decode(),
        "linear-api-key": cat("lin_api_", s(ALNUM, 40)),
        "maxmind-license-key": cat(s(ALNUM, 6), "_", s(ALNUM, 29), "_mmk"),
        "microsoft-teams-webhook": cat(
            "https://",
            s(LOWER_ALNUM, 8),
            ".webhook.office.com/webhookb2/",
            uuid,
            "@",
            uuid,
            "/IncomingWebhook/",
            s(HEX, 32),
            "/",
            uuid,
        ),
        "notion-api-token": cat("ntn_", digits(11), s(ALNUM, 35)),
        "npm-access-token": cat("npm_", s(ALNUM, 36)),
        "octopus-deploy-api-key": cat("API-", s(UPPER_ALNUM, 26)),
        "openai-api-key": lambda g: f"sk-proj-{g.s(URLSAFE, 74)}T3BlbkFJ{g.s(URLSAFE, 74)}",
        "openshift-user-token": cat("sha256~", s(URLSAFE, 43)),
        "perplexity-api-key": cat("pplx-", s(ALNUM, 48)),
        "planetscale-api-token": cat("pscale_tkn_", s(ALNUM, 40)),
        "planetscale-oauth-token": cat("pscale_oauth_", s(ALNUM, 40)),
        "planetscale-password": cat("pscale_pw_", s(ALNUM, 40)),
        "postman-api-token": cat("PMAK-", s(HEX, 24), "-", s(HEX, 34)),
        "prefect-api-token": cat("pnu_", s(ALNUM, 36)),
        "pulumi-api-token": cat("pul-", s(HEX, 40)),
        "pypi-upload-token": cat("pypi-AgEIcHlwaS5vcmc", s(URLSAFE, 120)),
        "readme-api-token": cat("rdme_", s(LOWER_ALNUM, 70)),
        "rubygems-api-token": cat("rubygems_", s(HEX, 48)),
        "scalingo-api-token": cat("tk-us-", s(URLSAFE, 48)),
        "sendgrid-api-token": cat("SG.", s(URLSAFE, 22), ".", s(URLSAFE, 43)),
        "sendinblue-api-token": cat("xkeysib-", s(HEX, 64), "-", s(ALNUM, 16)),
        "sentry-org-token": cat("sntrys_eyJpYXQiO", s(ALNUM, 40), "LCJyZWdpb25fdXJs", s(ALNUM, 40), "_", s(ALNUM, 43)),
        "sentry-user-token": cat("sntryu_", s(HEX, 64)),
        "settlemint-application-access-token": cat("sm_aat_", s(ALNUM, 16)),
        "settlemint-personal-access-token": cat("sm_pat_", s(ALNUM, 16)),
        "settlemint-service-access-token": cat("sm_sat_", s(ALNUM, 16)),
        "shippo-api-token": cat("shippo_live_", s(HEX, 40)),
        "shopify-access-token": cat("shpat_", s(HEX, 32)),
        "shopify-custom-access-token": cat("shpca_", s(HEX, 32)),
        "shopify-private-app-access-token": cat("shppa_", s(HEX, 32)),
        "shopify-shared-secret": cat("shpss_", s(HEX, 32)),
        "slack-app-token": cat("xapp-1-A", s(UPPER_ALNUM, 10), "-", digits(13), "-", s(HEX, 64)),
        "slack-bot-token": cat("xoxb-", digits(12), "-", digits(13), "-", s(ALNUM, 24)),
        "slack-config-access-token": cat("xoxe.xoxp-1-", s(UPPER_ALNUM, 164)),
        "slack-config-refresh-token": cat("xoxe-1-", s(UPPER_ALNUM, 146)),
        "slack-legacy-bot-token": cat("xoxb-", digits(10), "-", s(ALNUM, 24)),
        "slack-legacy-token": cat("xoxs-", digits(10), "-", digits(10), "-", digits(10), "-", s(HEX, 64)),
        "slack-legacy-workspace-token": cat("xoxa-2-", s(ALNUM, 40)),
        "slack-user-token": cat("xoxp-", digits(12), "-", digits(12), "-", digits(13), "-", s(HEX, 32)),
        "slack-webhook-url": cat(
            "https://hooks.slack.com/services/T", s(UPPER_ALNUM, 10), "/B", s(UPPER_ALNUM, 10), "/", s(ALNUM, 24)
        ),
        "sourcegraph-access-token": cat("sgp_", s(HEX, 16), "_", s(HEX, 40)),
        "square-access-token": cat("sq0atp-", s(URLSAFE, 22)),
        "stripe-access-token": cat("sk_test_", s(ALNUM, 40)),
        "twilio-api-key": cat("SK", s(HEX, 32)),
        "vault-batch-token": cat("hvb.", s(URLSAFE, 140)),
        "vault-service-token": cat("hvs.", s(URLSAFE, 95)),
        # Our own bare rules (rules/beamclaw.toml).
        "age-secret-key": cat("AGE-SECRET-KEY-1", s("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
        "telegram-bot-token-bare": cat(digits(10), ":AA", s(URLSAFE, 33)),
        "dockerhub-token": cat("dckr_pat_", s(URLSAFE, 27)),
        # gitleaks finds these only after a name (mapbox_token = ...); their prefix is
        # enough to find them bare (rules/beamclaw.toml, "bare-" rules).
        "defined-networking-api-token": cat("dnkey-", s(LOWER_ALNUM, 26), "-", s(LOWER_ALNUM, 52)),
        "dropbox-short-lived-api-token": cat("sl.", s(ALNUM, 135)),
        "dropbox-long-lived-api-token": cat(s(LOWER_ALNUM, 11), "AAAAAAAAAA", s(URLSAFE, 43)),
        "gocardless-api-token": cat("live_", s(URLSAFE, 40)),
        "lob-api-key": cat("live_", s(HEX, 35)),
        "lob-pub-api-key": cat("test_pub_", s(HEX, 31)),
        "mailchimp-api-key": cat(s(HEX, 32), "-us", digits(2)),
        "mailgun-pub-key": cat("pubkey-", s(HEX, 32)),
        "mapbox-api-token": cat("pk.", s(ALNUM, 60), ".", s(ALNUM, 22)),
        "new-relic-browser-api-token": cat("NRJS-", s(HEX, 19)),
        "new-relic-insert-key": cat("NRII-", s(LOWER_ALNUM, 32)),
        "new-relic-user-api-key": cat("NRAK-", s(UPPER_ALNUM, 27)),
        "plaid-api-token": cat("access-production-", uuid),
        "sonar-api-token": cat("squ_", s(LOWER_ALNUM, 40)),
        "twitter-bearer-token": cat("A" * 22, s(ALNUM, 90)),
        "typeform-api-token": cat("tfp_", s(URLSAFE, 59)),
        "yandex-access-token": cat("t1.", s(URLSAFE, 20), ".", s(URLSAFE, 86)),
        "yandex-api-key": cat("AQVN", s(URLSAFE, 36)),
        "yandex-aws-access-token": cat("YC", s(URLSAFE, 38)),
    }


#: How a bare credential sits in text: alone, in a sentence, quoted, in brackets.
BARE_CONTEXTS: Final = ("{}", "The key is {}.", "use '{}', then", "token ({}) expired", "<{}>", "{}\n")


def _bare(name: str, make: Callable[[_Gen], str]) -> _Maker:
    def maker(g: _Gen) -> tuple[str, str]:
        secret = make(g)
        text = g.r.choice(BARE_CONTEXTS).format(secret)
        if name == "bearer-token":
            secret = secret.split()[1]
        return text, secret

    return maker


#: Every rule id `credential_corpus` plants a bare credential for.
BARE_RULES: Final = tuple(_bare_secrets())


def bare_secrets(seed: int = 0) -> dict[str, str]:
    """A fresh credential for each rule of `BARE_RULES`, as its format has it (Bearer and all)."""
    g = _Gen(seed)
    return {name: make(g) for name, make in _bare_secrets().items()}


#: The names of the formats `credential_corpus` makes, in order.
FORMATS: Final = tuple(_formats())


def credential_corpus(seed: int = 0) -> list[Credential]:
    """One `Credential` per format in `FORMATS`, with fresh values drawn from *seed*."""
    g = _Gen(seed)
    return [Credential(name, *make(g)) for name, make in _formats().items()]


def bare_corpus(seed: int = 0) -> list[Credential]:
    """One `Credential` per rule of `BARE_RULES` (named ``bare:<rule id>``): a fresh
    credential of its format, bare in prose (one of `BARE_CONTEXTS`)."""
    g = _Gen(seed)
    return [Credential(f"bare:{name}", *_bare(name, make)(g)) for name, make in _bare_secrets().items()]


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
