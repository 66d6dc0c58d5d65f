"""The words for a password, a PIN and a passphrase in each language `secret_prose` reads, and
the words that lead from one to its value: data, one entry per language.

To add a language, add its words here; tests/core/data/secrets/holdout4_* measure them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Words:
    """One language's words: regular expressions in lower case, each alternative starting with
    a letter (the text is searched for all of them at once, at the speed of a first letter)."""

    password: str = ""  # a password: its value follows
    pin: str = ""  # a PIN or a door, alarm, safe code: digits follow
    either: str = ""  # a password or a PIN (`비밀번호`, `密码` say both)
    phrase: str = ""  # a passphrase: words in quotes follow
    wifi: str = ""  # a Wi-Fi network, whose password may follow
    lead: str = ""  # words between the name and its value: "is", "now", "changed to"
    bare: bool = True  # the value may follow the name with nothing between: "heslo X"
    joined: bool = False  # a word may end a compound: `adminlösenord`, Arabic `وكلمة`, CJK


LANGUAGES: dict[str, Words] = {
    "en": Words(
        password=r"password|passwd|pwd?\b|login\b|wi-?fi\s+key\b|network\s+key\b|wpa2?\s+key\b|"
        r"pre-?shared\s+key\b|psk\b|shared\s+secret\b|community\s+string\b",
        pin=r"pin(?:\s+code)?\b|puk\d?(?:\s+code)?\b|passcode\b|combination\b|door\s+code\b|"
        r"gate\s+code\b|alarm\s+code\b|garage\s+code\b|safe\s+code\b|keypad\s+code\b|"
        r"lock\s+code\b|entry\s+code\b|locker\s+code\b",
        phrase=r"pass\s?phrase|secret\s+phrase\b",
        lead=r"is|was|are|now|it's|(?:set|changed|reset|updated)\s+to|becomes",
    ),
    "ar": Words(
        password=r"كلم[ةه]\s+(?:ال)?(?:مرور|سر)|باسورد|باسوورد|رمز\s+(?:ال)?(?:مرور|دخول)",
        either=r"رقم\s+(?:ال)?سري|رمز\s+(?:ال)?سري",
        pin=r"pin\b",
        phrase=r"عبار[ةه]\s+(?:ال)?(?:مرور|سر)",
        lead=r"هي|هو|هى|أصبحت|أصبح|صارت|الآن|الان",
        joined=True,
    ),
    "cs": Words(
        password=r"hesl(?:o|a|u|em|e|y)\b",
        pin=r"pin(?:\s+kód)?\b|vstupní\s+kód\b|přístupový\s+kód\b|kód\s+(?:k|ke|od|do|na)\s+"
        r"(?:dveř|vchod|alarm|trezor|zámk|zámek|bran)",
        phrase=r"přístupová\s+fráz[ei]\b|heslová\s+fráz[ei]\b",
        lead=r"je|jsou|zní|bylo|byl|na|teď|nyní|nově",
    ),
    "de": Words(
        password=r"passw(?:ort|örter)|kennw(?:ort|örter)|wlan-?(?:schlüssel|key)|"
        r"wifi-?(?:schlüssel|key)|wi-fi-?(?:schlüssel|key)|netzwerk-?schlüssel|wpa2?-?schlüssel",
        pin=r"pin(?:-?code|-?nummer)?\b|geheimzahl|türcode|tür-code|torcode|alarmcode|"
        r"zugangscode|tresorcode|garagencode|schlosscode|hauscode|zahlenschloss|kombination\b",
        phrase=r"passphrase|passsatz|merksatz",
        lead=r"ist|lautet|sind|war|jetzt|nun|auf|in",
        joined=True,
    ),
    "el": Words(
        password=r"κωδικ\w*|συνθηματικ\w*",
        pin=r"pin\b",
        phrase=r"φράση\s+πρόσβασης|συνθηματική\s+φράση",
        lead=r"είναι|ήταν|σε|τώρα|έγινε",
    ),
    "es": Words(
        password=r"contraseñas?\b|clave\b",
        pin=r"pin\b|c[oó]digo\s+(?:pin|del?\s+(?:la\s+)?(?:portal|puerta|alarma|garaje|caja\s+"
        r"fuerte|candado|acceso|desbloqueo|entrada|trastero))\b|combinación\b",
        phrase=r"frase\s+(?:de\s+contraseña|secreta|de\s+paso)\b",
        lead=r"es|era|son|será|ahora|a|queda|quedó",
    ),
    "fr": Words(
        password=r"mots?\s+de\s+passe\b|mdp\b|code\s+wi-?fi\b|clé\s+(?:wi-?fi|wpa2?|de\s+"
        r"sécurité)\b",
        pin=r"code\s+pin\b|pin\b|digicode\b|code\s+(?:de\s+la\s+porte|du\s+portail|d'accès|"
        r"d'entrée|de\s+l'alarme|du\s+cadenas|du\s+coffre|de\s+l'immeuble|du\s+garage)|"
        r"combinaison\b",
        phrase=r"phrase\s+(?:secrète|de\s+passe)\b",
        lead=r"est|était|sera|devient|reste|c'est|à|maintenant|désormais",
    ),
    "he": Words(
        password=r"סיסמ(?:ה|א|ת|אות|ות)|ססמ(?:ה|א)|פאסוורד",
        either=r"קוד\s+(?:ה)?(?:סודי|כניסה|גישה|אזעקה|לדלת|הדלת)",
        pin=r"pin\b",
        lead=r"היא|הוא|זה|זו|עכשיו|כעת",
        joined=True,
    ),
    "hi": Words(
        password=r"पासवर्ड|कूटशब्द|पासकोड",
        pin=r"पिन(?:\s+कोड)?|pin\b",
        phrase=r"पासफ़्रेज़|पासफ्रेज",
        lead=r"बदलकर|अब",
        joined=True,
    ),
    "id": Words(
        password=r"kata\s+sandi(?:nya)?\b|sandi(?:nya)?\b|password(?:nya)?\b",
        pin=r"pin(?:nya)?\b|kode\s+(?:pintu|brankas|alarm|akses)\b",
        phrase=r"frasa\s+sandi\b",
        lead=r"adalah|ialah|yaitu|yakni|jadi|sekarang|diganti|diubah",
    ),
    "it": Words(
        password=r"password\b|parola\s+d'ordine\b|chiave\s+(?:wi-?fi|wpa2?|di\s+rete)\b",
        pin=r"codice\s+pin\b|pin\b|codice\s+(?:del\s+cancello|della\s+porta|dell'allarme|"
        r"di\s+accesso|del\s+lucchetto|della\s+cassaforte|del\s+portone|d'ingresso)|"
        r"combinazione\b",
        phrase=r"frase\s+(?:segreta|d'accesso|di\s+accesso)\b",
        lead=r"è|e'|era|sarà|ora|adesso|diventa|rimane",
    ),
    "ja": Words(
        password=r"パスワード",
        pin=r"暗証番号|pinコード|pin\b|ロック解除コード|解錠番号",
        phrase=r"パスフレーズ|合言葉",
        lead=r"は|が|を|に|って",
        joined=True,
    ),
    "ko": Words(
        password=r"패스워드|암호(?![화문학])",
        either=r"비밀\s?번호|비번",
        pin=r"pin\b|핀\s*번호",
        lead=r"은|는|이|가|으로|로",
        joined=True,
    ),
    "nl": Words(
        password=r"wachtwoord(?:en)?|wifi-?code\b|wifi-?sleutel\b|netwerksleutel\b",
        pin=r"pin(?:code)?\b|deurcode|alarmcode|toegangscode|poortcode|kluiscode|garagecode|"
        r"combinatie\b",
        phrase=r"wachtzin\b|wachtwoordzin\b",
        lead=r"is|was|luidt|wordt|nu|naar|op|blijft",
        joined=True,
    ),
    "pl": Words(
        password=r"has(?:ło|ła|łem|łu|le|eł|lo|la)\b|haśle\b",
        pin=r"pin(?:u|em)?\b|kod\s+(?:pin|do\s+(?:drzwi|domofonu|bramy|sejfu|klatki|furtki|"
        r"alarmu)|alarmu|dostępu)\b|szyfr\b",
        phrase=r"fraz(?:a|ę|y)\b",
        lead=r"to|jest|brzmi|było|teraz|na",
    ),
    "pt": Words(
        password=r"senhas?\b|palavra-passe\b",
        pin=r"pin\b|c[oó]digo\s+(?:pin|do\s+(?:portão|cofre|alarme|cadeado|prédio)|"
        r"da\s+porta|de\s+acesso|de\s+entrada)\b",
        phrase=r"frase\s+(?:secreta|-?senha|de\s+senha)\b",
        lead=r"é|era|será|agora|para|fica|ficou|virou|continua",
    ),
    "ru": Words(
        password=r"парол(?:ь|я|ю|ем|е|и|ей)\b",
        pin=r"пин(?:-?код\w*)?\b|pin\b|код\s+(?:от|для|к)\s+(?:домофона|двери|подъезда|сейфа|"
        r"сигнализации|калитки|ворот)\b|код\s+доступа\b",
        phrase=r"кодов(?:ая|ую|ой)\s+фраз\w*|парольн(?:ая|ую|ой)\s+фраз\w*|кодовое\s+слово\b",
        lead=r"это|теперь|сейчас|он|она|будет|стал|на",
    ),
    "sv": Words(
        password=r"lösenord(?:et|en)?|lösen\b|wifi-?nyckel(?:n)?\b",
        pin=r"pin(?:-?kod(?:en)?)?\b|larmkod(?:en)?|portkod(?:en)?|dörrkod(?:en)?|kod(?:en)?\s+"
        r"till\s+(?:dörren|porten|larmet|kassaskåpet|boxen)\b|kombination(?:en)?\b",
        phrase=r"lösenfras(?:en)?",
        lead=r"är|var|blir|blev|nu|till",
        joined=True,
    ),
    "tr": Words(
        password=r"şifre(?:si|sini|m|mi|miz|niz|yi|nin)?\b|parola(?:sı|m|mı|mız|nız)?\b",
        pin=r"pin(?:\s+kodu)?\b|kapı\s+(?:kodu|şifresi)\b|alarm\s+(?:kodu|şifresi)\b|"
        r"kasa\s+(?:kodu|şifresi)\b",
        lead=r"artık|şu|şimdi|oldu",
    ),
    "uk": Words(
        password=r"парол(?:ь|я|ю|ем|і|ів)\b",
        pin=r"пін(?:-?код\w*)?\b|код\s+(?:від|до|для)\s+(?:домофона|дверей|під'їзду|сейфа|"
        r"сигналізації)\b",
        phrase=r"кодов(?:а|у|ої)\s+фраз\w*|парольн(?:а|у|ої)\s+фраз\w*",
        lead=r"це|тепер|зараз|він|вона|буде|став|на",
    ),
    "vi": Words(
        password=r"mật\s+khẩu\b|mk\b",
        pin=r"mã\s+pin\b|pin\b|mã\s+(?:cửa|két|khóa|mở\s+cửa|báo\s+động)\b",
        phrase=r"câu\s+mật\s+khẩu\b|cụm\s+mật\s+khẩu\b",
        lead=r"là|giờ\s+là|bây\s+giờ\s+là|mới\s+là|thành",
    ),
    "zh": Words(
        password=r"口令",
        either=r"密码|密碼",
        pin=r"pin[码碼]",
        phrase=r"密码短语|密碼短語",
        lead=r"是|为|為|改成|改为|改為|设为|設為|设置为|設定為|换成|換成|变成|變成",
        joined=True,
    ),
    # "wifi: X", "WLAN → X" in any language (but "wifi Planta2" names the network, and
    # `WIFI:T:WPA;…` is a QR code's payload, read by its own rule)
    "*": Words(wifi=r"wi-?fi\b(?!:[a-z]:)|wlan\b", bare=False),
}
