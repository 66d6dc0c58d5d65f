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
# "login: user / password" in the languages of the fourth corpus ("accesso al modem: admin / …")
_LOGIN = (
    "login|credentials|creds|accesso|acceso|accès|acesso|zugang|zugangsdaten|přístup|доступ|"
    "dostęp|toegang|inloggning|giriş|đăng nhập|ログイン|登录|登錄|로그인|πρόσβαση|גישה|دخول|"
    "लॉगिन|akses|ilo|idrac|ipmi|bmc|router|modem|console|panel|dashboard|údaje|přihlašovací|"
    "credenziali|credenciales|identifiants|inlogg|inloggegevens|anmeldedaten|логин|логін|"
    "giriş bilgileri|account|konto|cuenta|conta|compte"
)
_LOGIN_KEYWORDS = _LOGIN + "|wifi|wi-fi"
# A recovery code of another service: letters and at least two digits (Twitter's 12, Steam's R
# and five), four words of four letters (Dropbox), five groups of five (Microsoft)
_OTHER_CODE = (
    r"(?:\b(?=[A-Za-z]*\d[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]{6,16}\b|"
    r"\b[a-z]{4}(?: [a-z]{4}){3}\b|\b[A-Z0-9]{5}(?:-[A-Z0-9]{5}){2,5}\b)"
)

# Words before "key" that name no service: the key is an index, an object's name, a hash, a
# public key's fingerprint
_NOT_VENDOR = (
    r"(?!(?:S3|Redis|Cache|Primary|Public|SSH|GPG|PGP|Object|Sort|Partition|Row|Foreign|Hash|"
    r"Host|Signing|Idempotency|Lookup|Map|Dedup|Trace|ETag|Etag|Request|Commit|Correlation|"
    r"Checksum|Content|The|This|That|My|Our|Your|A|An|New|Old|Unique|Composite|Shard|Routing)\b)"
)
# "1." or "2)": what a numbered list holds
_NUMBERED = "|".join(f"{digit}{mark}" for digit in "0123456789" for mark in ".)")

# (kind, check, keywords, regex). `check` says what the matched value must also pass: ""
# nothing but not being a placeholder or a documented example (the shape says it all);
# "random" must look generated; "password" must look chosen (digits or symbols, not plain
# words, not a template); "pin" digits; "basic" base64 of user:password. `keywords` ("a|b"):
# the rule runs only if one of them is in the lowercased text (all are found in one pass);
# "a|b & c": one of a and b, and c too (a seed phrase's word list needs a line break).
RULES: tuple[tuple[str, str, str, str], ...] = (
    (
        "private key", "pem", "private key",
        r"-----BEGIN [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END [A-Z0-9 ]"
        r"{0,30}PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,.-]*)",
    ),
    (  # OpenVPN's tls-auth/tls-crypt key (ta.key): 256 bytes of hex between its armour
        "OpenVPN static key", "", "openvpn static key",
        r"-----BEGIN OpenVPN Static key V\d-----[\s\S]*?-----END OpenVPN Static key V\d-----",
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
        "Azure client secret", "", "q~",
        r"(?<![\w~.-])[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![\w~.-])",
    ),
    (
        "GitHub token", "", "ghp_|gho_|ghu_|ghs_|ghr_|github_pat_",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})\b",
    ),
    (
        "GitLab token", "",
        "glpat-|gldt-|glrt-|glptt-|glft-|glsoat-|glcbt-|glimt-|gloas-|glagent-|glwt-|glffct-",
        rf"\bgl(?:pat|dt|rt|ptt|ft|soat|cbt|imt|oas|agent|wt|ffct)-[A-Za-z0-9_-]{{20,300}}{_END}",
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
        "Discord bot token", "", ".",
        r"(?<![\w.-])[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![\w.-])",
    ),
    (
        "Discord webhook", "", "discord",
        r"https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{60,300}",
    ),
    ("Telegram bot token", "random", ":", rf"(?:\b|(?<=bot))\d{{8,10}}:[A-Za-z0-9_-]{{35}}{_END}"),
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
        "Bitwarden token", "", "0.",
        r"\b0\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.[A-Za-z0-9]{20,40}"
        r":[A-Za-z0-9+/]{20,40}={0,2}",
    ),
    ("age secret key", "", "age-secret-key-", r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b"),
    ("Nostr private key", "", "nsec1", r"\bnsec1[02-9ac-hj-np-z]{58}\b"),
    (  # BIP32 extended private keys (xprv, and tprv, yprv, zprv… of testnet and SegWit)
        "extended private key", "", "prv",
        r"\b[xyztuvYZUV]prv[1-9A-HJ-NP-Za-km-z]{100,112}\b",
    ),
    ("Airtable token", "", "pat", r"\bpat[A-Za-z0-9]{14}\.[a-f0-9]{64}\b"),
    ("Firebase server key", "", "apa91b", r"\bAAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{60,300}"),
    ("Flutterwave key", "", "flwseck", r"\bFLWSECK(?:_TEST)?-[a-f0-9]{32}-X\b"),
    ("Shippo token", "", "shippo_", r"\bshippo_(?:live|test)_[a-f0-9]{40}\b"),
    ("Mailchimp key", "", "-us", r"\b[a-f0-9]{32}-us\d{1,2}\b"),
    ("Asana token", "", "asana|/", r"\b[12]/\d{12,20}/\d{12,20}:[a-f0-9]{32}\b"),
    (
        "LaunchDarkly key", "", "api-|sdk-",
        r"\b(?:api|sdk)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
    ),
    ("Netlify token", "", "nfp_", r"\bnfp_[A-Za-z0-9]{36,40}\b"),
    ("Fly.io token", "", "flyv1", r"\bFlyV1 fm\d_[A-Za-z0-9+/=_-]{40,4096}"),
    (
        "Tailscale key", "", "tskey-",
        r"\btskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}",
    ),
    ("ngrok token", "", "ngrok|authtoken", r"\b[12][A-Za-z0-9]{26}_[A-Za-z0-9]{20,22}\b"),
    ("Docker Hub token", "", "dckr_", r"\bdckr_(?:pat|oat)_[A-Za-z0-9_-]{24,40}"),
    ("JFrog key", "", "akcp|cmvmd", r"\b(?:AKCp[A-Za-z0-9]{69}|cmVmd[A-Za-z0-9]{59})\b"),
    ("New Relic license key", "", "nral", r"\b[a-f0-9]{36}NRAL\b"),
    ("Dynatrace token", "", "dt0", r"\bdt0[a-z]\d\d\.[A-Z0-9]{24}\.[A-Z0-9]{64}\b"),
    ("Buildkite token", "", "bkua_|bkct_", r"\bbk(?:ua|ct)_[a-f0-9]{40}\b"),
    ("1Password token", "", "ops_eyj", r"\bops_eyJ[A-Za-z0-9+/=_-]{60,4096}"),
    ("Tencent Cloud key", "", "akid", r"\bAKID[A-Za-z0-9]{32}\b"),
    ("RubyGems key", "", "rubygems_", r"\brubygems_[a-f0-9]{48}\b"),
    ("Alibaba Cloud key", "", "ltai", r"\bLTAI[A-Za-z0-9]{12,24}\b"),
    ("NuGet key", "", "oy2", r"\boy2[a-z0-9]{43}\b"),
    ("Perplexity key", "", "pplx-", r"\bpplx-[A-Za-z0-9]{40,64}\b"),
    # More prefixes the vendors document, so their keys are found with no word around them
    ("Databricks token", "", "dapi", r"\bdapi[a-f0-9]{32}(?:-\d)?\b"),
    ("Supabase token", "", "sbp_|sb_secret_", r"\b(?:sbp_[a-f0-9]{40}|sb_secret_[\w-]{30,80})\b"),
    ("PlanetScale token", "", "pscale_", rf"\bpscale_(?:tkn|pw|oauth)_[\w.-]{{32,64}}{_END}"),
    ("Pulumi token", "", "pul-", r"\bpul-[a-f0-9]{40}\b"),
    ("Figma token", "", "figd_", rf"\bfigd_[\w-]{{40,}}{_END}"),
    ("CircleCI token", "", "ccipat_", r"\bCCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}\b"),
    ("xAI key", "", "xai-", r"\bxai-[A-Za-z0-9]{70,90}\b"),
    ("Contentful token", "", "cfpat-", rf"\bCFPAT-[\w-]{{43}}{_END}"),
    ("Render key", "", "rnd_", r"\brnd_[A-Za-z0-9]{32}\b"),
    ("Brevo key", "", "xkeysib-", r"\bxkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}\b"),
    ("OneSignal key", "", "os_v2_", r"\bos_v2_(?:app|org)_[a-z2-7]{60,}\b"),
    ("LangSmith key", "", "lsv2_", r"\blsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}\b"),
    ("Pinecone key", "", "pcsk_", r"\bpcsk_[A-Za-z0-9]{4,8}_[A-Za-z0-9]{40,80}\b"),
    ("OpenRouter key", "", "sk-or-", r"\bsk-or-v1-[a-f0-9]{64}\b"),
    ("SonarQube token", "", "squ_|sqp_|sqa_", r"\bsq[upa]_[a-f0-9]{40}\b"),
    ("DeepSeek key", "", "sk-", r"\bsk-[a-f0-9]{32}\b"),
    ("ElevenLabs key", "", "sk_", r"\bsk_[a-f0-9]{48}\b"),
    ("Twilio API key", "", "sk", r"\bSK[0-9a-f]{32}\b"),
    ("Resend key", "", "re_", r"\bre_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}\b"),
    ("Fireworks key", "", "fw_", r"\bfw_[A-Za-z0-9]{24}\b"),
    ("Dropbox token", "", "sl.", rf"\bsl\.(?:u\.)?[\w-]{{130,}}{_END}"),
    ("crates.io token", "", "cio", r"\bcio[A-Za-z0-9]{32}\b"),
    ("Facebook token", "random", "eaa", r"\bEAA[B-Z][A-Za-z0-9]{90,400}\b"),
    ("GitLab runner token", "", "gr1348941", r"\bGR1348941[\w-]{20,50}"),
    ("Twitter bearer token", "random", "aaaaaaaaaaaaaaaaaaaaa", r"\bA{21,22}[A-Za-z0-9%]{30,200}"),
    ("Backblaze key", "random", "k00", r"\bK00\d[A-Za-z0-9/+]{27}(?![A-Za-z0-9/+])"),
    ("1Password secret key", "", "a3-", r"\bA3-[A-Z0-9]{6}-[A-Z0-9]{6}(?:-[A-Z0-9]{5}){4}\b"),
    (
        "HubSpot token", "", "pat-",
        r"\bpat-(?:na|eu|ap)\d-[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}\b",
    ),
    ("Intercom token", "", "dg9roj", r"\bdG9rOj[A-Za-z0-9+/]{40,}={0,2}"),
    (
        "Cloudflare tunnel token", "", "cloudflared",
        r"\bcloudflared\b[^\n]{0,80}?\s(?:--token\s+)?(?P<s>eyJ[A-Za-z0-9+/=_-]{40,4096})",
    ),
    ("Salesforce session", "", "00d", r"\b00D[A-Za-z0-9]{12,15}![A-Za-z0-9._-]{60,400}"),
    (
        "private key", "", "private|privkey|wallet|eth",
        r"(?i:private[ _-]?key|privkey|wallet[ _-]key|secret[ _-]key|eth(?:ereum)?[ _-]key)"
        r"[^\n]{0,40}?"
        r"(?:\b0x[0-9a-fA-F]{40}\b[^\w\n]{1,5})?"  # the wallet's address, then its key
        r"(?P<s>\b(?:0x)?[0-9a-fA-F]{64}\b)",
    ),
    (
        "Bitcoin private key", "wif or said", "wif",
        r"(?i:\bwif\b)[^\n]{0,30}?(?<![1-9A-HJ-NP-Za-km-z])(?P<s>[5KLc9][1-9A-HJ-NP-Za-km-z]"
        r"{50,51})(?![1-9A-HJ-NP-Za-km-z])",
    ),
    (
        "API key", "random or hex", "x-|api-key|authorization",
        r"(?i)(?<![\w-])(?:x-[\w-]*(?:key|token|team|secret|auth)[\w-]*|api-key)\s*[=:]\s*"
        r"(?P<s>[A-Za-z0-9+/_.=-]{16,300})",
    ),
    (
        "password", "password", "basicauth|credential|getconnection|auth=(|auth = (",
        r"(?i)\b(?:BasicAuth|HTTPBasicAuth|HTTPDigestAuth|NetworkCredential|PSCredential|"
        r"UsernamePasswordCredentials|getConnection|auth\s*=\s*)\s*\(\s*(?:[^()]{0,200}?,\s*)?"
        r"[\"'][^\"'\n]{1,80}[\"']\s*,\s*[\"'](?P<s>[^\"'\n]{4,200})[\"']",
    ),
    (
        "password", "password", "convertto-securestring",
        r"(?i)\bConvertTo-SecureString\s+(?:-String\s+)?" + _V + r"[^\n]{0,40}?-AsPlainText",
    ),
    (
        "password", "password", "identified",
        r"(?i)\bidentified\s+(?:with\s+\w+\s+)?by\s+(?:password\s+)?" + _V,
    ),
    (
        "Algolia admin key", "", "algoliasearch",
        r"\balgoliasearch\(\s*[\"'][A-Z0-9]{10}[\"']\s*,\s*[\"'](?P<s>[a-f0-9]{32})[\"']"
        r"(?=[^\n]{0,80}(?i:admin|write|reindex))",
    ),
    (
        "private key", "shape", "solana|keypair|id.json|phantom|wallet|private|secret|export",
        r"(?i:solana|keypair|id\.json|phantom|wallet|private\s+key|secret\s+key|export)[\s\S]{0,80}?"
        r"(?P<s>\[(?:\s*\d{1,3}\s*,){63}\s*\d{1,3}\s*\])",
    ),
    (
        "seed phrase", "words", "wallet|seed|mnemonic|recovery|backup|semilla|frase|phrase & \n",
        r"(?i:wallet|seed|mnemonic|recovery|backup|semilla|frase|phrase)[^\n]{0,80}\n\s*"
        r"(?P<s>[a-z]{3,8}(?:[ \t]+[a-z]{3,8}){11,23})\b",
    ),
    (
        "npm credentials", "basic", "_auth",
        r"(?m)(?:^|:)_auth\s*=\s*(?P<s>[A-Za-z0-9+/]{8,}={0,2})",
    ),
    ("Vault token", "", "vault", r"\bs\.[A-Za-z0-9]{24}\b"),
    (
        "Plaid token", "", "access-",
        r"\baccess-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}"
        r"-[0-9a-f]{4}-[0-9a-f]{12}\b",
    ),
    (  # a catch hook's URL lets anyone post into the flow: Zapier, IFTTT, Make
        "webhook URL", "", "hooks.zapier.com|maker.ifttt.com|make.com|integromat.com",
        r"https://(?:hooks\.zapier\.com/hooks/catch/\d+/[A-Za-z0-9]+/?|maker\.ifttt\.com/"
        r"trigger/[^\s/]+/with/key/[A-Za-z0-9_-]{16,}|hook\.(?:\w+\.)?(?:make|integromat)\.com/"
        r"[a-z0-9]{20,})",
    ),
    (
        "Teams webhook", "", "webhook.office.com",
        r"https://[\w-]+\.webhook\.office\.com/webhookb2/[^\s\"'<>]{40,400}",
    ),
    (
        "Azure function key", "", "azurewebsites.net",
        r"azurewebsites\.net/api/[^\s?]*\?(?:[^\s#]*&)?code=(?P<s>[A-Za-z0-9_-]{30,}={0,2})",
    ),
    (
        "Google OAuth token", "", "ya29.|1//",
        r"\b(?:ya29\.[A-Za-z0-9_-]{30,4096}|1//0[A-Za-z0-9_-]{40,400})",
    ),
    ("Laravel app key", "", "base64:", r"(?<![\w;])base64:[A-Za-z0-9+/]{43}="),
    ("BitLocker recovery key", "", "-", r"\b\d{6}(?:-\d{6}){7}\b"),
    (
        "password hash", "crackable", "$",
        r"(?<![\w$])\$(?:apr1|1|5|6|y)\$[./A-Za-z0-9]{1,16}\$[./A-Za-z0-9]{22,86}"
        r"|(?<![\w$])\$2[abxy]\$\d\d\$[./A-Za-z0-9]{53}",
    ),
    (
        "Bitcoin private key", "wif", "wif|priv|wallet|bitcoin|btc|key|electrum|paper",
        r"(?<![1-9A-HJ-NP-Za-km-z])[5KLc9][1-9A-HJ-NP-Za-km-z]{50,51}(?![1-9A-HJ-NP-Za-km-z])",
    ),
    (
        "private key", "random", "private|secret|phantom|solana|keypair|export",
        r"(?i:private|secret|phantom|solana|keypair|export)[^\n]{0,60}?"
        r"(?<![1-9A-HJ-NP-Za-km-z])(?P<s>[1-9A-HJ-NP-Za-km-z]{86,90})(?![1-9A-HJ-NP-Za-km-z])",
    ),
    (
        "private key", "", "privkey|private",
        r"(?i:privkey|private[ _-]?key)[^\n]{0,40}?(?<![A-Za-z0-9+/])"
        r"(?P<s>[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=)(?![A-Za-z0-9+/=])",
    ),
    (
        "Vault unseal key", "random", "unseal",
        r"(?i)\bunseal(?: key \d+:|\s)\s*(?P<s>[A-Za-z0-9+/]{40,60}={0,2})",
    ),
    (
        "Consul token", "", "secretid",
        r"(?i)\bSecretID\b[\"']?\s*[:=]\s*[\"']?(?P<s>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}"
        r"-[0-9a-f]{12})",
    ),
    (
        "Splunk token", "", "splunk",
        r"\bSplunk\s+(?P<s>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})",
    ),
    ("Okta token", "", "ssws", r"\bSSWS\s+(?P<s>00[A-Za-z0-9_-]{40})"),
    ("Twitch token", "", "oauth:", r"\bPASS\s+oauth:(?P<s>[a-z0-9]{30})\b"),
    ("Rails master key", "", "master.key", r"master\.key\b[^\n]{0,30}?\b(?P<s>[0-9a-f]{32})\b"),
    (
        "encryption key", "", "openssl",
        r"\bopenssl\b[^\n]{0,160}?\s-K\s+(?P<s>[0-9a-fA-F]{32,128})\b",
    ),
    (
        "Rails encryption key", "password", "active_record_encryption",
        r"(?i)active_record_encryption:[\s\S]{0,300}?\b(?:primary_key|deterministic_key|"
        r"key_derivation_salt):\s*" + _V,
    ),
    (
        "WordPress key", "long", "define",
        r"\bdefine\(\s*['\"](?:AUTH|SECURE_AUTH|LOGGED_IN|NONCE)_(?:KEY|SALT)['\"]\s*,\s*" + _V,
    ),
    (
        "Go database password", "password", "@tcp(|@unix(",
        r"(?<![\w:])[\w.-]{1,64}:(?P<s>[^\s@:/\"']{3,200})@(?:tcp|unix)\(",
    ),
    (
        "password", "spoken password", ".pgpass|pgpass",
        r"(?m)^[^:\s]+:(?:\d+|\*):[^:\s]+:[^:\s]+:(?P<s>\S{3,200})$",
    ),
    (
        "2FA secret", "", "2fa|mfa|totp|otp|authenticator|setup key",
        r"(?i)\b(?:2fa|mfa|totp|otp|authenticator|setup)\b[^\n]{0,40}?\b(?:key|secret|seed)\b"
        r"[^\n]{0,30}?[:=]?\s*(?P<s>(?=[A-Z2-7]{16,64}\b)[A-Z]*[2-7][A-Z2-7]*|"
        r"[a-z2-7]{4}(?: [a-z2-7]{4}){3,7})\b",
    ),
    (
        "recovery code", "", "recovery|backup|rescue & code",
        r"(?i)\b(?:recovery|backup|rescue)(?:[\s_-]+verification)?[\s_-]+codes?\b"
        r"(?:[^\n]{0,60}?|[^\n]{0,60}\n[^\n]{0,60}\n)(?:\n\s*)?(?P<s>\b"
        r"(?:[a-z0-9]{5}-[a-z0-9]{5}|\d{4} \d{4}|\d{8}|[A-Z0-9]{4}(?:-[A-Z0-9]{4}){2,7})\b"
        r"(?:[ \t]*[\n,;][ \t]*(?:\d{1,2}[.)]\s*)?(?:[a-z0-9]{5}-[a-z0-9]{5}|\d{4} \d{4}|\d{8}|"
        r"[A-Z0-9]{4}(?:-[A-Z0-9]{4}){2,7})\b)*)",
    ),
    (
        "recovery code", "", "recovery|backup|rescue & code",
        r"(?i:\b(?:recovery|backup|rescue)[\s_-]+codes?\b)[^\n]{0,40}?[:：]?\s*(?P<s>"
        + _OTHER_CODE
        + r"(?:[ \t]*[\n,;][ \t]*"
        + _OTHER_CODE
        + r")*)",
    ),
    (
        "Google app password", "", "app password|app-password|apppassword",
        r"(?i:app[ -]?password)[^\n]{0,40}?(?P<s>\b[a-z]{4} [a-z]{4} [a-z]{4} [a-z]{4}\b)",
    ),
    (  # written without its spaces in a mail setting: `spring.mail.password=abcdefghijklmnop`
        "Google app password", "", "mail|smtp",
        r"(?i:smtp|mail)[\w.-]{0,30}?(?i:pass(?:word)?|pwd)[\"']?\s*[=:]\s*[\"']?"
        r"(?P<s>[a-z]{16})(?![\w-])",
    ),
    (
        "Google app password", "", "gmail",
        r"['\"](?P<s>[a-z]{4} [a-z]{4} [a-z]{4} [a-z]{4})['\"][^\n]{0,40}(?i:gmail|app password)",
    ),
    (
        "encryption key", "random or hex", "key",
        r"(?i)\b(?:aes(?:-?(?:128|192|256))?|encryption|data|master|chacha20|symmetric|backup|"
        r"decryption|signing|hmac|at-rest|data-at-rest|fernet)\b[\w ()/,-]{0,40}?\bkey\b"
        r"[^\n:=]{0,60}?"
        r"(?:\bis\b|:|=)\s*[\"']?(?P<s>[A-Za-z0-9+/_=-]{24,200})",
    ),
    (
        "API key in a URL", "random or hex", "key=|token=|secret=|appid=|auth=",
        r"(?i)[?&](?:api[_-]?key|apikey|app[_-]?id|app[_-]?key|access[_-]?token|auth[_-]?token|"
        r"token|key|secret|client[_-]?secret|auth)=(?P<s>[A-Za-z0-9_\-.~%]{16,300})",
    ),
    (
        "session cookie", "random", "sess|sid|cookie",
        r"(?i)(?<![\w-])(?:sessionid|session_id|session|user_session|_session|connect\.sid|phpsessid|"
        r"jsessionid|laravel_session|[a-z_]*_sess|sid|remember_token|remember_user_token|"
        r"(?:__Host-|__Secure-)?[\w-]*session[\w-]*)="
        r"(?P<s>[A-Za-z0-9%._\-]{16,400})",
    ),
    (  # Oracle's thin driver: user/password@host
        "password in URL", "url password", "jdbc:oracle",
        r"(?i)\bjdbc:oracle:\w+:[^\s/:@\"']{1,64}/(?P<s>[^\s@/\"']{3,200})@",
    ),
    (  # NEO4J_AUTH=neo4j/password, a container's user and password in one variable
        "password", "password", "_auth",
        r"\b[A-Z][A-Z0-9]*_AUTH\s*[=:]\s*[\"']?[\w.-]{1,64}/(?P<s>[^\s\"'/]{3,200})",
    ),
    (
        "password in URL", "url password", "://",
        r"(?i)\b[a-z][a-z0-9+.-]{0,20}://[^\s:/@]{0,80}:(?P<s>[^\s:@/]{3,4096})@",
    ),
    (
        "Basic credentials", "basic", "basic",
        r"(?i)\bBasic\s+(?P<s>[A-Za-z0-9+/]{8,2000}={0,2})(?![A-Za-z0-9+/=])",
    ),
    (
        "Bearer token", "random or hex", "bearer",
        r"(?i)\bBearer\s+(?P<s>[A-Za-z0-9._~+/-]{16,300}=*)",
    ),
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
        r"(?<!\S)--?(?:password|passwd|pass|pwd|token|api-key|secret|passphrase)(?:=|\s+)" + _V,
    ),
    ("password", "password", "sqlcmd", r"\bsqlcmd\b[^\n]{0,120}?\s-P\s*" + _V),
    # a user, then the password: `ipmitool -U ADMIN -P X`, `racadm -u root -p X`, `bcp … -U sa -P X`
    ("password", "password", "-u & -p", r"\s-(?:U\s+\S+\s+-P|u\s+\S+\s+-p)\s+" + _V),
    # archives: `7z a -pSECRET`, `rar a -hpSECRET`, `zip -P SECRET`
    (
        "password", "password", "7z|rar",
        r"\b(?:7z|7za|7zz|7zr|rar|unrar|winrar)\b[^\n]{0,80}?\s-h?p(?=[^\s-])" + _V,
    ),
    ("password", "password", "zip", r"\b(?:zip|unzip|zipcloak)\b[^\n]{0,80}?\s-P\s+" + _V),
    (
        "password", "password", "openssl & pass:|-k ",
        r"\bopenssl\b[^\n]{0,160}?\s(?:-(?:pass|passin|passout)\s+pass:|-k\s+)" + _V,
    ),
    # a password piped to a command that reads it: `echo 'X' | sudo -S …`, `| passwd --stdin`
    (
        "password", "password", "echo|printf & sudo|stdin",
        r"\b(?:echo|printf)\s+(?:-[ne]+\s+)?" + _V + r"\s*\|\s*(?:sudo\s+(?:-\w+\s+)*-S\b|"
        r"(?:sudo\s+)?\S*passwd\s+--stdin\b|[^\n|]{0,120}--password-stdin\b)",
    ),
    ("password", "password", "mosquitto", r"\bmosquitto_\w+\b[^\n]{0,160}?\s-P\s+" + _V),
    (
        "password", "password", "mongo",
        r"\bmongo(?:sh|dump|restore|export|import)?\b[^\n]{0,160}?\s(?:-p|--password)"
        r"(?:=|\s+)" + _V,
    ),
    ("password", "password", "redis-cli", r"\bredis-cli\b[^\n]{0,120}?\s(?:-a|--pass)\s+" + _V),
    # redis-cli's prompt: `127.0.0.1:6379> AUTH default X`
    (
        "password", "password", "auth ",
        r"(?m)(?:^|>[ \t]*)AUTH[ \t]+(?:\w+[ \t]+)?" + _V + r"[ \t]*$",
    ),
    ("password", "password", "ldap", r"\bldap\w*\b[^\n]{0,200}?\s-w\s+" + _V),
    (
        "password", "password", "storepass|keypass",
        r"\s-(?:storepass|keypass|srcstorepass|deststorepass)\s+" + _V,
    ),
    (
        "password", "community", "snmp",
        r"\bsnmp(?:walk|get|set|bulkwalk|bulkget|trap|getnext|table)\b[^\n]{0,60}?\s-c\s+" + _V,
    ),
    (
        "password", "password", "requirepass|masterauth",
        r"(?m)^\s*(?:requirepass|masterauth)\s+" + _V,
    ),
    (
        "password", "password", "echo",
        r"\becho\s+" + _V + r"\s*>>?\s*\S*(?i:pass|secret|token|key)\S*",
    ),
    ("API key", "shape", "wandb", r"\bwandb\s+login\s+(?:--\S+\s+)*(?P<s>[a-f0-9]{40})\b"),
    (
        "API key", "", "snyk",
        r"\bsnyk\s+auth\s+(?P<s>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b",
    ),
    ("password", "password", "htpasswd", r"\bhtpasswd\s+-\w*b\w*\s+(?:-\w+\s+)*\S+\s+\S+\s+" + _V),
    ("password", "password", "net use", r"(?i)\bnet\s+use\b[^\n]{0,80}?/user:\S+\s+" + _V),
    ("password", "password", "wifi:", r"\bWIFI:[^\n]{0,200}?(?<=[:;])P:(?P<s>[^;\n]{4,200});"),
    ("password", "password", "net user", r"(?i)\bnet\s+user\s+\S+\s+" + _V + r"(?=\s|$)"),
    (
        "password", "password", "from-literal",
        r"--from-literal[= ](?i:[\w.-]*(?:pass|secret|token|key|pwd)[\w.-]*)=" + _V,
    ),
    (
        "password", "password", "pass",
        r"(?i)\buser(?:name)?\s*[:=]?\s*[^\s,]+,?\s+pass(?:word)?\s*[:=]?\s*" + _V,
    ),
    # an e-mail address, a slash and the password it logs in with: "me@x.io / Couch&Popcorn7"
    (
        "password", "password", "@",
        r"(?<![\w.+/-])[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})*\.[A-Za-z]{2,24}\s+/\s+" + _V,
    ),
    # "…, pass X": a password listed after the account it opens
    ("password", "password", "pass", r"(?i)(?:^|[,;]\s*)pass\s+" + _V),
    (
        "password", "community", "snmp",
        r"(?i)\bsnmp\b[^\n]{0,40}?\bcommunity\b[^\n:=]{0,60}?(?:\bis\b|:|=)\s*" + _V,
    ),
    # Passwords in prose: "my password is X", "pw for the router is X", "wifi password: X".
    (
        "password", "spoken password", "pass|pw|mot de passe|contraseña|clave|kennwort|senha",
        r"(?i)\b(?:password|passwort|kennwort|passwd|passphrase|pass|pw|pwd|mot de passe|"
        r"contraseña|clave|senha)\b"
        r"(?:\s+(?:for|of|on|to|du|de|des|der|des|für|at|in)\b[^\n:=\[\]]{0,60}?)?\s*"
        r"(?:\b(?:is|was|to|ist|lautet|es|est|era|é)\b(?:\s*:)?"
        r"(?:\s+(?:now|still|set\s+to|changed\s+to))?|[=:]|(?<=\s)-(?=\s)|->)\s*" + _V,
    ),
    (
        "password", "password", "password|passphrase|pw",
        r"(?i)\b(?:password|passphrase|pw|pwd)\s+" + _V,
    ),
    (
        "password", "password", "wifi|wi-fi",
        r"(?i)\bwi-?fi\b[^\n]{0,40}?(?:->|=>)\s*" + _V,
    ),
    (
        "passphrase", "words", "pass|pw|seed|mnemonic|phrase|wallet",
        r"(?i)\b(?:passphrase|password|passwort|pw|seed|mnemonic|(?:recovery|backup|secret|seed)"
        r"\s+phrase)\b[^\n]{0,60}?(?:\bis\b|:|=|->|\bit'?s\b)\s*[\"']?"
        r"(?P<s>[a-z]{2,10}(?:[ -][a-z]{2,10}){3,23})\b",
    ),
    (
        "seed phrase", "words", "seed|mnemonic|phrase|wallet|backup|recovery & " + _NUMBERED,
        r"(?i:seed|mnemonic|phrase|wallet|backup|recovery)[^\n]{0,60}?"
        r"(?P<s>(?:\n?\s*\d{1,2}[.)]\s*[a-z]{3,8}\b){12,24})",
    ),
    (
        "password", "password", _LOGIN_KEYWORDS,
        rf"(?i)(?<!\w)(?:{_LOGIN}|wi-?fi(?!:[A-Z]:))(?!\w)[^\n]{{0,40}}?(?:\n[^\n:]{{0,20}})?"
        r"(?:\bis\b|\bare\b|:)\s*[^\s/:]{2,}\s*[/:]\s*" + _V,
    ),
    (
        "PIN", "pin", "pin|passcode|code",
        r"(?i)\b(?:pin(?![\s-]*pads?\b)|passcode|(?:door|gate|alarm|garage|safe|keypad|lock)"
        r"(?:\s+(?:disarm|arm|entry|access|unlock|master))?\s+code|code\s+(?:for|to)"
        r"\s+the\s+(?:door|gate|alarm|garage|safe|keypad|lock)\w*(?:\s+\w+)?)\b[^\n\d]{0,40}?"
        r"(?<!\d)(?P<s>\d{4,8}[#*]?)(?!\d)",
    ),
    # "... secret <random>", "api key: <random>" in prose; after a bare "key" (cache key,
    # primary key) a hash is not a secret.
    (
        "secret", "random or hex", "secret|token|key|psk|pre-shared|preshared|pat|cookie|write",
        r"(?i)(?<![:/])\b(?:secret|token|api[ _-]?key|access[ _-]?key|psk|pre-?shared[ _-]?key|"
        r"app(?:lication)?[ _-]?key|account[ _-]?key\d?|pat|personal[ _-]access[ _-]token|"
        r"(?:session[ _-])?cookie|(?:write|admin|master|server|service|root|management)[ _-]?key)"
        r"\b"
        r"(?:\s*\([^)\n]{0,60}\))?(?:\s+(?:for|of|on|to|with|from|shared\s+with|used\s+by|"
        r"given\s+to|between)\b[^\n:=\[\]]{0,50}?)?"
        r"(?:\s*\([^)\n]{0,40}\))?(?:\s+(?:is|was))?\s*[:=]?\s*"
        r"[\"']?(?P<s>[A-Za-z0-9+/_.=-]{16,200})",
    ),
    (  # a service's key by its name, hex and all ("Azure OpenAI key (east us): 3f9a…"), but
        # not a key that is an index, an object's name or a public key's fingerprint
        "API key", "random or hex", "key",
        r"(?<![\w-])(?:" + _NOT_VENDOR + r"[A-Z][\w.-]*\s+){1,3}"
        r"(?:API\s+|api\s+)?key\b(?:\s*\([^)\n]{0,40}\))?(?:\s+(?:for|of)\b[^\n:=]{0,40}?)?"
        r"\s*(?:\bis\b|:|=)\s*[\"']?(?P<s>[0-9a-f]{32,64}|[0-9A-F]{32,64})\b",
    ),
    (
        "secret", "bare random", "key",  # (a site key is in every page: reCAPTCHA's, hCaptcha's)
        r"(?i)(?<!site[ -])(?<!public )(?<!publishable )\bkey\b"
        r"(?:\s+(?:for|of|to|from)\b[^\n:=\[\]]{0,40}?)?(?:\s+(?:is|was))?\s*[:=]?\s*"
        r"[\"']?(?P<s>[A-Za-z0-9+/_.=-]{16,200})",
    ),
    # A quoted random literal: a key passed straight to a client, `cohere.Client("…")`.
    (
        "secret", "quoted random", "\"|'",
        r"(?<!sitekey=)(?<!siteKey=)(?P<q>[\"'])(?P<s>[A-Za-z0-9_-]{32,200})(?P=q)",
    ),
)  # fmt: skip

# `name = value`, `"name": "value"`, `NAME=value`: a name made of these words holds a secret.
PASSWORD_WORDS = {"password", "passwd", "pwd", "pass", "passphrase", "passwort", "pw", "psk"}
SECRET_WORDS = {"secret": "secret", "token": "token", "authtoken": "token", "apikey": "API key"}
SECRET_WORDS |= {"authtok": "token", "pat": "token"}
SECRET_PAIRS = {"api", "access", "secret", "private", "app", "application", "master", "signing"}
SECRET_PAIRS |= {"admin", "routing", "integration"}
SECRET_PAIRS |= {"encryption", "account", "auth", "client", "subscription", "webhook"}
PUBLIC_WORDS = {"public", "pub", "publishable", "cache", "primary", "foreign", "sort", "partition"}
PUBLIC_WORDS |= {"site", "sitekey"}  # reCAPTCHA/hCaptcha site keys are in every page
# ... unless the name ends in one of these (it names a property of the secret, not the secret).
NOT_SECRET_SUFFIXES = set(
    "id ids name names type types url uri path file dir env var length len count hash hashed arn "
    "hasher hashers salt field fields header headers prompt label policy expiry expires ttl "
    "seconds timeout limit size service manager generator model backend backends validator "
    "regex pattern format prefix endpoint enabled required min max".split()
)
# Its name first, then its value (`VALUE` at the end of the name's match): a name that holds
# no secret costs no look at a value (4,096 characters each, on every `a=` of a long text)
ASSIGNMENT = re.compile(
    r"(?<![\w.\-$/])(?<!\w:)\$?(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,60})[\"']?\]?[ \t]*"
    r"(?::=|=>|=|:)[ \t]*"
)
# ... whose unquoted value, when it starts as `name=` (`Server=x;Password=y`, `a=b=c=…`), is
# that name alone: the next name is read from there, and no 4,096 characters are read again
# for each `=` of a long line (a Django key's `^$k=3u&…` is read whole)
VALUE = re.compile(
    r"""(?:"(?P<q1>[^"\n]{1,4096})"|'(?P<q2>[^'\n]{1,4096})'|"""
    r"""(?P<u>[A-Za-z_][\w.\-]{0,60}(?==[^=\s])|[^\s"'`]{1,4096}))"""
)
# `const API_KEY: &str = "…"`, `apiKey: string = '…'`: a name, its type, then its value
TYPED = re.compile(
    r"(?<![\w.\-$])(?P<name>[A-Za-z_][\w]{0,60})[ \t]*:[ \t]*&?(?:'static[ \t]+)?"
    r"[A-Za-z_][\w<>\[\]., ]{0,40}?[ \t]*=[ \t]*" + _V
)
# `Splunk_Token  7d07…` (Fluent Bit, nginx, sshd style), `SetEnv DB_PASS x` (Apache)
SPACED = re.compile(
    r"(?m)^[ \t]*(?:SetEnv[ \t]+|PassEnv[ \t]+)?(?P<name>[A-Za-z_][\w.\-]{0,60})[ \t]+"
    + _V
    + r"[ \t]*$"
)
# `{"name": "X-API-KEY", "value": "…"}`: a header or a variable in an HTTP client's export
NAME_VALUE = re.compile(
    r"[\"']name[\"']\s*:\s*[\"'](?P<name>[\w.\-]{1,60})[\"']\s*,\s*[\"']value[\"']\s*:\s*" + _V
)
XML_ELEMENT = re.compile(r"<(?P<name>[A-Za-z_][\w.\-]{0,60})>(?P<u>[^<>\n]{1,4096})</(?P=name)>")
DEFINE = re.compile(r"\bdefine\(\s*[\"'](?P<name>[\w.\-]+)[\"']\s*,\s*" + _V)
# Terraform: `variable "db_password" { default = "…" }`, the name before its block
TERRAFORM = re.compile(
    r"\bvariable\s+\"(?P<name>[\w.\-]{1,60})\"\s*\{[^{}]{0,300}?\bdefault\s*=\s*" + _V
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
        "QWxhZGRpbjpvcGVuIHNlc2FtZQ==",  # RFC 7617: Aladdin:open sesame
        "7Fjfp0ZBr1KtDRbnfVdmIw",  # RFC 6749, section 2.3.1
        "gho_16C7e42F292c6912E7710c838347Ae178B4a",  # GitHub's docs
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
    "replace", "redacted", "insert", "not-a-real", "...", "…", "<", ">", "${", "{{", "%(",
)  # fmt: skip
# lower, UPPER or Title case only: `yoUr` inside a random key is not a placeholder
PLACEHOLDER_PART = re.compile(
    "|".join(re.escape(v) for p in PLACEHOLDER_PARTS for v in {p, p.upper(), p.capitalize()})
)
PUBLIC_PREFIXES = ("pk_live_", "pk_test_", "pk.eyJ", "phc_", "age1")
PUBLIC_PREFIXES += ("sha256-", "sha384-", "sha512-")  # Subresource Integrity hashes
PUBLIC_PREFIXES += ("arn:aws:",)  # the name of a secret in AWS, not the secret
PUBLIC_PREFIXES += ("hmac-sha256:",)  # a value as Vault's audit log writes it: hashed, keyed
VOWELS = frozenset("aeiouyAEIOUY")
SHORT_WORDS = frozenset(
    "key api get set url uri max min new old raw str int app env var log msg req res id db ui "
    "io os http ssl tls aes rsa jwt sql xml json html css dom".split()
)
