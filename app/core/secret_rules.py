"""The secret detector's rules, as data: vendor shapes, the words of the generic
`name = value` rule, and the documented examples and placeholders that are never secrets.

`app/core/secrets.py` applies them; tests/core/data/secrets/ measures them.
"""

from __future__ import annotations

import re

# A quoted or bare value; a rule's secret is group `s`, else the first of q1/q2/u that matched.
_V = r"""(?:"(?P<q1>[^"\n]{1,4096})"|'(?P<q2>[^'\n]{1,4096})'|(?P<u>[^\s"'`]{1,4096}))"""
_AWS_ID = r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z2-7]{16}"
_END = r"(?![A-Za-z0-9_-])"
_AWS_KEYWORDS = "akia|asia|abia|acca|agpa|aida|aroa|aipa|anpa|anva|apka|a3t"

# (kind, check, keywords, regex). `check` says what the matched value must also pass: ""
# nothing but not being a placeholder or a documented example (the shape says it all);
# "random" must look generated; "password" must look chosen (digits or symbols, not plain
# words, not a template); "pin" digits; "basic" base64 of user:password. `keywords` ("a|b"):
# the rule runs only if one of them is in the lowercased text (cheap on megabytes of text).
RULES: tuple[tuple[str, str, str, str], ...] = (
    (
        "private key", "pem", "private key",
        r"-----BEGIN [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END [A-Z0-9 ]"
        r"{0,30}PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,.-]*)",
    ),
    (
        "private key", "", "putty-user-key",
        r"PuTTY-User-Key-File-\d[\s\S]*?(?P<s>Private-Lines:[\s\S]*?(?:Private-MAC: \w+|\Z))",
    ),
    ("AWS access key", "", _AWS_KEYWORDS, rf"\b{_AWS_ID}\b"),
    (
        "AWS secret key", "random", _AWS_KEYWORDS,
        rf"\b{_AWS_ID}\b[\s\S]{{0,100}}?(?<![A-Za-z0-9/+])(?P<s>[A-Za-z0-9/+]{{40}})"
        r"(?![A-Za-z0-9/+=])",
    ),
    (
        "AWS secret key", "random", "aws",
        r"(?i)\baws_?secret_?access_?key[\"']?(?:\s*[:=]\s*|\s+)[\"']?(?P<s>[A-Za-z0-9/+]{40})"
        r"(?![A-Za-z0-9/+=])",
    ),
    ("Django secret key", "", "django-insecure-", r"django-insecure-[^\s'\"]{40,60}"),
    ("Google API key", "", "aiza", rf"\bAIza[0-9A-Za-z_-]{{35}}{_END}"),
    ("Google OAuth secret", "", "gocspx-", rf"\bGOCSPX-[A-Za-z0-9_-]{{28}}{_END}"),
    (
        "Azure storage key", "", "accountkey|sharedaccesskey",
        r"(?i)\b(?:AccountKey|SharedAccessKey)\s*=\s*(?P<s>[A-Za-z0-9+/]{20,300}={0,2})",
    ),
    ("Azure SAS signature", "", "sig=", r"[?&]sig=(?P<s>[A-Za-z0-9%+/=]{20,300})"),
    (
        "Azure client secret", "", "8q~",
        r"(?<![\w~.-])[A-Za-z0-9_~.-]{3}8Q~[A-Za-z0-9_~.-]{31,34}(?![\w~.-])",
    ),
    (
        "GitHub token", "", "ghp_|gho_|ghu_|ghs_|ghr_|github_pat_",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})\b",
    ),
    (
        "GitLab token", "", "glpat-|gldt-|glrt-|glptt-|glft-|glsoat-|glcbt-|glimt-|gloas-",
        rf"\bgl(?:pat|dt|rt|ptt|ft|soat|cbt|imt|oas)-[A-Za-z0-9_-]{{20,300}}{_END}",
    ),
    (
        "Bitbucket/Atlassian token", "", "atbb|atatt3|atctt3",
        r"\b(?:ATBB[A-Za-z0-9_=.-]{28,300}|AT(?:ATT|CTT)3[A-Za-z0-9_=-]{60,300})",
    ),
    (
        "Slack token", "", "xox|xapp-",
        r"\b(?:xox[abposre]-[A-Za-z0-9-]{10,300}|xapp-\d-[A-Z0-9]+-\d+-[a-f0-9]+)",
    ),
    (
        "Slack webhook", "", "hooks.slack.com",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/T[A-Z0-9]+/[A-Z0-9]+/"
        r"[A-Za-z0-9]{20,300}",
    ),
    (
        "Discord bot token", "", "",
        r"(?<![\w.-])[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![\w.-])",
    ),
    (
        "Discord webhook", "", "discord",
        r"https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{60,300}",
    ),
    ("Telegram bot token", "random", "", rf"\b\d{{8,10}}:[A-Za-z0-9_-]{{35}}{_END}"),
    (
        "Stripe key", "", "sk_live_|sk_test_|rk_live_|rk_test_|whsec_",
        r"\b(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,300}|whsec_[A-Za-z0-9]{24,300})\b",
    ),
    (
        "Square token", "", "eaaa|sq0atp-|sq0csp-",
        rf"\b(?:EAAA[A-Za-z0-9_-]{{60}}|sq0(?:atp|csp)-[A-Za-z0-9_-]{{22,43}}){_END}",
    ),
    (
        "Braintree token", "", "access_token$",
        r"\baccess_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}\b",
    ),
    (
        "OpenAI key", "", "sk-",
        r"\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,300}|(?:None-)?[A-Za-z0-9_-]{20,80}T3BlbkFJ"
        rf"[A-Za-z0-9_-]{{20,80}}|[A-Za-z0-9]{{48}}){_END}",
    ),
    (
        "Anthropic key", "", "sk-ant-",
        rf"\bsk-ant-(?:api|admin|sid)\d\d-[A-Za-z0-9_-]{{80,300}}{_END}",
    ),
    ("Hugging Face token", "mixed case", "hf_", r"\bhf_[A-Za-z]{30,40}\b"),
    ("Replicate token", "", "r8_", r"\br8_[A-Za-z0-9]{37}\b"),
    ("Groq key", "", "gsk_", r"\bgsk_[A-Za-z0-9]{52}\b"),
    (
        "JWT", "", "eyj",
        r"\beyJ[A-Za-z0-9_-]{8,2000}+\.eyJ[A-Za-z0-9_-]{8,2000}+\.[A-Za-z0-9_-]{8,2000}",
    ),
    (
        "Mapbox secret token", "", "sk.eyj",
        r"\bsk\.eyJ[A-Za-z0-9_-]{20,300}+\.[A-Za-z0-9_-]{20,300}",
    ),
    ("npm token", "", "npm_", r"\bnpm_[A-Za-z0-9]{36}\b"),
    (
        "PyPI token", "", "pypi-age",
        rf"\bpypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{{50,300}}{_END}",
    ),
    ("Shopify token", "", "shpat_|shpss_|shpca_|shppa_", r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b"),
    ("DigitalOcean token", "", "dop_v1_|doo_v1_|dor_v1_", r"\bdo[opr]_v1_[a-f0-9]{64}\b"),
    ("Vault token", "", "hvs.|hvb.|hvr.", rf"\bhv[sbr]\.[A-Za-z0-9_-]{{24,300}}{_END}"),
    ("SendGrid key", "", "sg.", rf"\bSG\.[A-Za-z0-9_-]{{22}}\.[A-Za-z0-9_-]{{43}}{_END}"),
    ("Mailgun key", "", "key-", r"\bkey-[0-9a-f]{32}\b"),
    ("Heroku key", "", "hrku-", rf"\bHRKU-[A-Za-z0-9_-]{{50,300}}{_END}"),
    (
        "Sentry DSN", "", "://",
        r"\bhttps?://(?P<s>[0-9a-f]{32})(?::[0-9a-f]{32})?@[\w.-]+(?::\d+)?/\d+",
    ),
    ("Sentry token", "", "sntrys_|sntryu_", r"\bsntry[su]_[A-Za-z0-9_=+/-]{40,300}"),
    ("Doppler token", "", "dp.", r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9._-]{40,300}"),
    ("Linear key", "", "lin_api_|lin_oauth_", r"\blin_(?:api|oauth)_[A-Za-z0-9]{40,64}\b"),
    ("Notion token", "", "secret_|ntn_", r"\b(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,300})\b"),
    (
        "Grafana token", "", "glsa_|glc_",
        r"\b(?:glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}|glc_[A-Za-z0-9+/]{32,300}={0,2})",
    ),
    ("New Relic key", "", "nrak-|nrjs-|nrii-", r"\bNR(?:AK|JS|II)-[A-Z0-9]{19,27}\b"),
    ("Postman key", "", "pmak-", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"),
    ("Terraform token", "", ".atlasv1.", r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,300}"),
    (
        "password in URL", "url password", "://",
        r"(?i)\b[a-z][a-z0-9+.-]{0,20}://[^\s:/@]{0,80}:(?P<s>[^\s:@/]{3,4096})@",
    ),
    (
        "Basic credentials", "basic", "basic",
        r"(?i)\bBasic\s+(?P<s>[A-Za-z0-9+/]{8,2000}={0,2})(?![A-Za-z0-9+/=])",
    ),
    ("Bearer token", "random", "bearer", r"(?i)\bBearer\s+(?P<s>[A-Za-z0-9._~+/-]{16,300}=*)"),
    # Passwords on command lines.
    ("password", "password", "sshpass", r"\bsshpass\b[^\n]{0,40}?\s-p\s*" + _V),
    (
        "password", "password", "mysql|mariadb",
        r"\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]{0,80}?\s-p(?=\S)" + _V,
    ),
    (
        "password", "password", "curl",
        r"\bcurl\b[^\n]{0,200}?\s(?:-u|--user)(?:\s+|=)[\"']?[^\s:\"']+:" + _V,
    ),
    ("password", "password", "docker", r"\bdocker\s+login\b[^\n]{0,80}?\s-p\s+" + _V),
    (
        "password", "password", "-pass|-pwd|-token|-api-key|-secret",
        r"(?<!\S)--?(?:password|passwd|pass|pwd|token|api-key|secret)(?:=|\s+)" + _V,
    ),
    ("password", "password", "htpasswd", r"\bhtpasswd\s+-\w*b\w*\s+(?:-\w+\s+)*\S+\s+\S+\s+" + _V),
    ("password", "password", "net use", r"(?i)\bnet\s+use\b[^\n]{0,80}?/user:\S+\s+" + _V),
    # Passwords in prose: "my password is X", "pw for the router is X", "wifi password: X".
    (
        "password", "password", "pass|pw|mot de passe|contraseña",
        r"(?i)\b(?:password|passwort|passwd|passphrase|pass|pw|pwd|mot de passe|contraseña)\b"
        r"(?:\s+(?:for|of|on|to|du|de|at|in)\b[^\n:=\[\]]{0,40}?)?\s*(?:\b(?:is|was|to)\b|[=:-])"
        r"\s*" + _V,
    ),
    ("password", "password", "password|passphrase", r"(?i)\b(?:password|passphrase)\s+" + _V),
    (
        "password", "password", "login|credentials|creds",
        r"(?i)\b(?:login|credentials|creds)\b[^\n]{0,40}?(?:\bis\b|\bare\b|:)\s*[^\s/:]+\s*[/:]"
        r"\s*" + _V,
    ),
    (
        "PIN", "pin", "pin|passcode|code",
        r"(?i)\b(?:pin|passcode|(?:door|gate|alarm|garage|safe|keypad|lock)\s+code|code\s+(?:for|to)"
        r"\s+the\s+(?:door|gate|alarm|garage|safe|keypad|lock)\w*(?:\s+\w+)?)\b[^\n\d]{0,15}?"
        r"(?<!\d)(?P<s>\d{4,8}[#*]?)(?!\d)",
    ),
    # "... secret <random>", "api key: <random>" in prose; after a bare "key" (cache key,
    # primary key) a hash is not a secret.
    (
        "secret", "random or hex", "secret|token|key",
        r"(?i)\b(?:secret|token|api[ _-]?key|access[ _-]?key)\b(?:\s+(?:is|was))?\s*[:=]?\s*"
        r"[\"']?(?P<s>[A-Za-z0-9+/_.=-]{16,200})",
    ),
    (
        "secret", "bare random", "key",
        r"(?i)\bkey\b(?:\s+(?:is|was))?\s*[:=]?\s*[\"']?(?P<s>[A-Za-z0-9+/_.=-]{16,200})",
    ),
    # A quoted random literal: a key passed straight to a client, `cohere.Client("…")`.
    ("secret", "bare random", "", r"(?P<q>[\"'])(?P<s>[A-Za-z0-9_-]{32,200})(?P=q)"),
)  # fmt: skip

# `name = value`, `"name": "value"`, `NAME=value`: a name made of these words holds a secret.
PASSWORD_WORDS = {"password", "passwd", "pwd", "pass", "passphrase", "passwort", "pw"}
SECRET_WORDS = {"secret": "secret", "token": "token", "authtoken": "token", "apikey": "API key"}
SECRET_PAIRS = {"api", "access", "secret", "private", "app", "application", "master", "signing"}
SECRET_PAIRS |= {"encryption", "account", "auth", "client", "subscription", "webhook"}
PUBLIC_WORDS = {"public", "pub", "publishable", "cache", "primary", "foreign", "sort", "partition"}
# ... unless the name ends in one of these (it names a property of the secret, not the secret).
NOT_SECRET_SUFFIXES = set(
    "id ids name names type types url uri path file dir env var length len count hash hashed "
    "hasher hashers salt field fields header headers prompt label policy expiry expires ttl "
    "seconds timeout limit size service manager generator model backend backends validator "
    "regex pattern format prefix endpoint enabled required min max".split()
)
ASSIGNMENT = re.compile(
    r"(?<![\w.\-$])(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,60})[\"']?[ \t]*(?::=|=>|=|:)[ \t]*" + _V
)
XML_SETTING = re.compile(r"\bkey\s*=\s*[\"'](?P<name>[\w.\-]+)[\"']\s+value\s*=\s*" + _V)

# Documented vendor examples: public, unusable, benign.
EXAMPLES = frozenset(
    {
        "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "AKIAI44QH8DHBEXAMPLE",
        "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
        "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
        "pk_test_TYooMQauvdEDq54NiTphI7jx",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiw"
        "iaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    }
)
# Values that stand for a secret without being one.
PLACEHOLDER_WORDS = frozenset(
    "password passwd pass pwd secret secrets token apikey api_key key admin root postgres mysql "
    "guest test testing user username changeme changeit default none null nil undefined true "
    "false todo tbd fixme empty required optional hidden redacted masked mask foo bar baz "
    "qux".split()
)
PLACEHOLDER_PARTS = (
    "your", "example", "sample", "placeholder", "dummy", "changeme", "change-me", "change_me",
    "replace", "redacted", "insert", "...", "…", "<", ">", "${", "{{", "%(",
)  # fmt: skip
# lower, UPPER or Title case only: `yoUr` inside a random key is not a placeholder
PLACEHOLDER_PART = re.compile(
    "|".join(re.escape(v) for p in PLACEHOLDER_PARTS for v in {p, p.upper(), p.capitalize()})
)
PUBLIC_PREFIXES = ("pk_live_", "pk_test_", "pk.eyJ")
VOWELS = frozenset("aeiouyAEIOUY")
SHORT_WORDS = frozenset(
    "key api get set url uri max min new old raw str int app env var log msg req res id db ui "
    "io os http ssl tls aes rsa jwt sql xml json html css dom".split()
)
