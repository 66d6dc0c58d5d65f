"""The words for a password, a PIN and a passphrase in each language `prose` reads, and
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
    everywhere: bool = False  # a word of every language (`PW`): any language's lead leads to it


# "door code", "garage opener code", "alarm panel code": a thing's code, a word between or not
_CODES = "|".join(
    rf"{thing}(?:\s+\w+)?\s+code\b"
    for thing in "door gate garage alarm safe keypad lock entry locker access unlock padlock "
    "security disarm building intercom".split()
)

LANGUAGES: dict[str, Words] = {
    "en": Words(
        password=r"password|login\b|wi-?fi\s+key\b|network\s+key\b|wpa2?\s+key\b|"
        r"pre-?shared\s+key\b|psk\b|shared\s+secret\b|community\s+string\b",
        pin=r"pin\d?(?:\s+code)?\b|puk\d?(?:\s+code)?\b|passcode\b|combination\b|combo\b|"
        + _CODES
        + r"|disarm\b|key\s?code\b|key\s?box\b|lock\s?box\b|key\s+safe\b|keysafe\b|"
        r"code\s+(?:for|to|of)\s+the\s+"
        r"(?:front\s+|back\s+|side\s+)?(?:door|gate|alarm|garage|safe|keypad|lock|building|shed|"
        r"lockbox|padlock)\b",
        phrase=r"pass\s?phrase|secret\s+phrase\b",
        lead=r"is|was|are|now|it's|'s|’s|(?:set|changed|reset|updated)\s+to|becomes",
    ),
    "ar": Words(
        password=r"كلم[ةه]\s+(?:ال)?(?:مرور|سر)|باسورد|باسوورد|رمز\s+(?:ال)?(?:مرور|دخول)|"
        r"كود\s+(?:ال)?واي\s?فاي",
        either=r"رقم\s+(?:ال)?سري|رمز\s+(?:ال)?سري|كود\s+(?:ال)?(?:باب|بوابة|خزنة|إنذار|انذار|دخول)",
        pin=r"pin\b",
        phrase=r"عبار[ةه]\s+(?:ال)?(?:مرور|سر)",
        lead=r"هي|هو|هى|أصبحت|أصبح|صارت|الآن|الان",
        joined=True,
    ),
    "cs": Words(
        password=r"hesl(?:o|a|u|em|e|y|ech|ům)\b|hesel\b",
        pin=r"pin(?:\s+kód)?\b|vstupní\s+kód\b|přístupový\s+kód\b|bezpečnostní\s+kód\b|"
        r"odemykací\s+kód\b|kód\s+(?:k|ke|od|do|na)\s+(?:dveř|vchod|alarm|trezor|zámk|zámek|bran|"
        r"garáž|schránk|skříňk|sejf)",
        phrase=r"přístupová\s+fráz[ei]\b|heslová\s+fráz[ei]\b",
        lead=r"je|jsou|zní|bylo|byl|zůstává|zůstalo|na|teď|nyní|nově",
    ),
    "de": Words(
        password=r"passw(?:ort|örter)|kennw(?:ort|örter)|wlan-?(?:schlüssel|key)|"
        r"wifi-?(?:schlüssel|key)|wi-fi-?(?:schlüssel|key)|netzwerk-?schlüssel|wpa2?-?schlüssel",
        pin=r"pin(?:-?code|-?nummer)?\b|geheimzahl|türcode|tür-code|torcode|alarmcode|"
        r"zugangscode|tresorcode|garagencode|schlosscode|hauscode|zahlenschloss|kombination\b|"
        r"entsperrcode|sicherheitscode|zahlencode|code\s+(?:für|vom|von|zur|zum)\s+(?:die\s+|den\s+"
        r"|das\s+)?(?:tür|tor|haustür|garage|tresor|alarm|safe|schloss|briefkasten|keller)",
        phrase=r"passphrase|passsatz|merksatz",
        lead=r"ist|lautet|sind|war|wäre|bleibt|heißt|jetzt|nun|auf|in",
        joined=True,
    ),
    "el": Words(
        password=r"συνθηματικ\w*",
        either=r"κωδικ\w*",  # (a card's PIN too)
        pin=r"pin\b",
        phrase=r"φράση\s+πρόσβασης|συνθηματική\s+φράση",
        lead=r"είναι|ήταν|σε|τώρα|έγινε",
    ),
    "es": Words(
        password=r"contraseñas?\b",
        either=r"clave\b",  # (a card's PIN too)
        pin=r"pin\b|c[oó]digo\s+(?:pin|secreto|de\s+seguridad|del?\s+(?:la\s+)?(?:portal|puerta|"
        r"alarma|garaje|caja\s+fuerte|candado|acceso|desbloqueo|entrada|trastero|buzón|"
        r"ascensor))\b|combinación\b|n[uú]mero\s+secreto\b",
        phrase=r"frase\s+(?:de\s+contraseña|secreta|de\s+paso)\b",
        lead=r"es|era|son|será|ahora|a|queda|quedó",
    ),
    "fr": Words(
        password=r"mots?\s+de\s+passe\b|mdp\b|code\s+wi-?fi\b|clé\s+(?:wi-?fi|wpa2?|de\s+"
        r"sécurité)\b",
        pin=r"code\s+pin\b|pin\b|digicode\b|code\s+(?:de\s+la\s+porte|du\s+portail|d'accès|"
        r"d'entrée|de\s+l'alarme|du\s+cadenas|du\s+coffre|de\s+l'immeuble|du\s+garage|"
        r"de\s+l'interphone|de\s+déverrouillage|de\s+la\s+carte|secret|confidentiel)|"
        r"combinaison\b",
        phrase=r"phrase\s+(?:secrète|de\s+passe)\b",
        lead=r"est|était|sera|devient|reste|c'est|à|maintenant|désormais",
    ),
    "he": Words(
        password=r"סיסמ(?:ה|א|ת|אות|ות)|ססמ(?:ה|א)|פאסוורד",
        either=r"קוד\s+(?:ה)?(?:סודי|כניסה|גישה|אזעקה|לדלת|הדלת)|קוד\s+של\s+(?:ה)?(?:דלת|אזעקה|"
        r"כספת|שער|בניין)|קוד\s+ל(?:ה)?(?:כספת|שער|בניין|אזעקה|לובי|חניה)",
        pin=r"pin\b",
        lead=r"היא|הוא|זה|זו|עכשיו|כעת",
        joined=True,
    ),
    "hi": Words(
        password=r"पासवर्ड|पास्वर्ड|कूटशब्द|पासकोड",
        pin=r"पिन(?:\s+(?:कोड|नंबर))?|pin\b|लॉक\s+कोड|डोर\s+कोड|दरवाज़े\s+का\s+कोड|दरवाजे\s+का\s+कोड",
        phrase=r"पासफ़्रेज़|पासफ्रेज",
        lead=r"बदलकर|अब",
        joined=True,
    ),
    "id": Words(
        password=r"kata\s+sandi(?:-?nya)?\b|sandi(?:-?nya)?\b|password(?:-?nya)?\b|pw-?nya\b|"
        r"pass-?nya\b",
        pin=r"pin(?:-?nya)?\b|kode\s+(?:pintu|brankas|alarm|akses|keamanan|rahasia|kunci|gembok|"
        r"garasi)\b",
        phrase=r"frasa\s+sandi\b",
        lead=r"adalah|ialah|yaitu|yakni|jadi|sekarang|diganti|diubah",
    ),
    "it": Words(
        password=r"password\b|parola\s+d'ordine\b|parola\s+chiave\b|chiave\s+(?:wi-?fi|wpa2?|"
        r"di\s+rete)\b",
        pin=r"codice\s+pin\b|pin\b|codice\s+(?:del\s+cancello|della\s+porta|dell'allarme|"
        r"di\s+accesso|del\s+lucchetto|della\s+cassaforte|del\s+portone|d'ingresso|segreto|"
        r"di\s+sblocco|del\s+bancomat|del\s+citofono|del\s+garage|del\s+box)|combinazione\b",
        phrase=r"frase\s+(?:segreta|d'accesso|di\s+accesso)\b",
        lead=r"è|é|e'|era|sarà|ora|adesso|diventa|rimane|resta",
    ),
    "ja": Words(
        password=r"パスワード|パスコード",
        pin=r"暗証番号|暗証コード|pinコード|pin\b|ロック解除コード|解除コード|解錠番号|ロック番号",
        phrase=r"パスフレーズ|合言葉",
        lead=r"は|が|を|に|って",
        joined=True,
    ),
    "ko": Words(
        password=r"패스워드|암호(?![화문학])",
        either=r"비밀\s?번호|비번|도어락\s*번호|현관\s*번호",
        pin=r"pin\b|핀\s*번호",
        lead=r"은|는|이|가|으로|로",
        joined=True,
    ),
    "nl": Words(
        password=r"wachtwoord(?:en)?|paswoord(?:en)?\b|ww\b|wifi-?code\b|wifi-?sleutel\b|"
        r"netwerksleutel\b",
        pin=r"pin(?:code)?\b|deurcode|alarmcode|toegangscode|poortcode|kluiscode|garagecode|"
        r"inlogcode|beveiligingscode|cijfercode|slotcode|combinatie\b|code\s+van\s+(?:de|het)\s+"
        r"(?:kluis|deur|voordeur|poort|alarm|garage|fietsslot|slot|brievenbus|berging)\b",
        phrase=r"wachtzin\b|wachtwoordzin\b",
        lead=r"is|was|luidt|wordt|nu|naar|op|blijft",
        joined=True,
    ),
    "pl": Words(
        password=r"has(?:ło|ła|łem|łu|le|eł|lo|la)\b|haśle\b",
        pin=r"pin(?:u|em)?\b|kod\s+(?:pin|do\s+(?:drzwi|domofonu|bramy|sejfu|klatki|furtki|"
        r"alarmu|garażu|szafki|kłódki)|alarmu|dostępu|odblokowania|zabezpieczający)\b|szyfr\b",
        phrase=r"fraz(?:a|ę|y)\b",
        lead=r"to|jest|brzmi|było|teraz|na",
    ),
    "pt": Words(
        password=r"palavra[- ]passe\b|chave\s+(?:do\s+)?wi-?fi\b",
        either=r"senhas?\b",  # (a card's PIN too: "senha do cartão")
        pin=r"pin\b|c[oó]digo\s+(?:pin|secreto|de\s+desbloqueio|de\s+seguran[çc]a|do\s+(?:portão|"
        r"cofre|alarme|cadeado|prédio)|da\s+porta|de\s+acesso|de\s+entrada)\b",
        phrase=r"frase\s+(?:secreta|-?senha|de\s+senha)\b",
        lead=r"é|era|será|agora|para|fica|ficou|virou|continua",
    ),
    "ru": Words(
        password=r"парол(?:ь|я|ю|ем|е|и|ей)\b",
        pin=r"пин(?:-?код\w*)?\b|pin\b|код\s+(?:от|для|к)\s+(?:домофона|двери|подъезда|сейфа|"
        r"сигнализации|калитки|ворот|замка|шкафчика|ячейки|гаража|квартиры)\b|код\s+доступа\b|"
        r"код\s+разблокировки\b|секретный\s+код\b",
        phrase=r"кодов(?:ая|ую|ой)\s+фраз\w*|парольн(?:ая|ую|ой)\s+фраз\w*|кодовое\s+слово\b",
        lead=r"это|теперь|сейчас|он|она|будет|был|стал|остался|стоит|на",
    ),
    "sv": Words(
        password=r"lösenord(?:et|en)?|lösen\b|wifi-?nyckel(?:n)?\b",
        pin=r"pin(?:-?kod(?:en)?)?\b|larmkod(?:en)?|portkod(?:en)?|dörrkod(?:en)?|"
        r"säkerhetskod(?:en)?|upplåsningskod(?:en)?|kod(?:en)?\s+till\s+(?:dörren|porten|larmet|"
        r"kassaskåpet|boxen|förrådet|garaget|cykellåset|hänglåset)\b|kombination(?:en)?\b",
        phrase=r"lösenfras(?:en)?",
        lead=r"är|var|blir|blev|heter|nu|till",
        joined=True,
    ),
    "tr": Words(
        # (also without its ş, as typed on a keyboard without it)
        password=r"parola(?:sı|m|mı|mız|nız)?\b",
        either=r"şifre(?:si|sini|m|mi|miz|niz|yi|nin)?\b|sifre(?:si|sini|m|mi|miz|niz|yi|nin)?\b",
        pin=r"pin(?:\s+kodu)?\b|kapı\s+(?:kodu|şifresi)\b|alarm\s+(?:kodu|şifresi)\b|"
        r"kasa\s+(?:kodu|şifresi)\b|kilit\s+(?:kodu|şifresi)\b|giriş\s+kodu\b|güvenlik\s+kodu\b",
        lead=r"artık|şu|şimdi|oldu",
    ),
    "uk": Words(
        password=r"парол(?:ь|я|ю|ем|і|ів)\b",
        pin=r"пін(?:-?код\w*)?\b|код\s+(?:від|до|для)\s+(?:домофона|домофону|дверей|під'їзду|"
        r"сейфа|сигналізації|замка|воріт|гаража|квартири)\b|код\s+доступу\b|"
        r"код\s+розблокування\b|секретний\s+код\b",
        phrase=r"кодов(?:а|у|ої)\s+фраз\w*|парольн(?:а|у|ої)\s+фраз\w*",
        lead=r"це|тепер|зараз|він|вона|буде|став|на",
    ),
    "vi": Words(
        password=r"mk\b|pass\s+wi-?fi\b",
        either=r"mật\s+khẩu\b|mật\s+mã\b",  # (an ATM card's PIN too)
        pin=r"mã\s+pin\b|pin\b|mã\s+(?:cửa|két|khóa|mở\s+cửa|mở\s+khóa|báo\s+động|bảo\s+mật|"
        r"cổng)\b",
        phrase=r"câu\s+mật\s+khẩu\b|cụm\s+mật\s+khẩu\b",
        lead=r"là|giờ\s+là|bây\s+giờ\s+là|mới\s+là|thành",
    ),
    "zh": Words(
        password=r"口令",
        either=r"密码|密碼|门禁码|門禁碼|开锁码|開鎖碼|帳密|账密",
        pin=r"pin[码碼]",
        phrase=r"密码短语|密碼短語",
        lead=r"是|为|為|改成|改为|改為|设为|設為|设置为|設定為|设置成|設置成|设成|設成|换成|換成|变成|"
        r"變成",
        joined=True,
    ),
    # "PW: X", "wifi: X", "WLAN → X" in any language (but "wifi Planta2" names the network, and
    # `WIFI:T:WPA;…` is a QR code's payload, read by its own rule)
    "*": Words(
        password=r"pwd?\b|psw\b|passw\b|pword\b",
        wifi=r"wi-?fi\b(?!:[a-z]:)|wlan\b|вай-?фай|واي\s?فاي|וויפי|ויפי|वाई-?फाई|ワイファイ|와이파이|"
        r"无线网|無線網路",
        bare=False,
        everywhere=True,
    ),
}
