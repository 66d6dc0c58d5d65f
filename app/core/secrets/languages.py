"""The words for a password, a PIN and a passphrase in each language `prose` reads, and
the words that lead from one to its value: data, one entry per language.

To add a language, add its words here; tests/core/data/secrets/holdout4_* and holdout5_*
measure them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Words:
    """One language's words: regular expressions in lower case, each alternative starting with
    two letters or more (the text is searched for all of them at once, at the speed of a first
    letter, and a text holding none of their beginnings is not read at all)."""

    password: str = ""  # a password: its value follows
    pin: str = ""  # a PIN or a door, alarm, safe code: digits follow
    either: str = ""  # a password or a PIN (`비밀번호`, `密码` say both)
    phrase: str = ""  # a passphrase: words in quotes follow
    wifi: str = ""  # a Wi-Fi network, whose password may follow
    # a code or a number, a PIN only with a thing it opens near it ("Hotellin tallelokeron
    # koodi on 5370", "Koden til safen er 3049"; not "error code 4012")
    code: str = ""
    # a thing a number opens, that number said after a colon or a lead ("Safe in the closet:
    # 5-29-41", "Den Zimmertresor haben wir auf 0612 gestellt")
    lock: str = ""
    alarm: str = ""  # as `lock`, but four digits may be the time it rings (`alarm: 0630`)
    thing: str = ""  # what a code opens (stems: `safe` for safen, `tresor` for Zimmertresor)
    lead: str = ""  # words between the name and its value: "is", "now", "changed to"
    first: str = ""  # words after a value opening the line, before the name ("X az új jelszó")
    after: str = ""  # a copula after the value, in a language that ends with the verb (`है`)
    bare: bool = True  # the value may follow the name with nothing between: "heslo X"
    joined: bool = False  # a word may end a compound: `adminlösenord`, Arabic `وكلمة`, CJK
    spaced: bool = True  # words stand apart: a lead is a word of its own (not in Thai, CJK)
    everywhere: bool = False  # a word of every language (`PW`): any language's lead leads to it


# "door code", "garage opener code", "alarm panel code": a thing's code, a word between or not
_CODES = "|".join(
    rf"{thing}(?:\s+\w+)?\s+code\b"
    for thing in "door gate garage alarm safe keypad lock entry locker access unlock padlock "
    "security disarm building intercom".split()
)

# "a code of the door": what a code opens, in every language at once (stems, compounds too:
# `dør` in Dørkoden, `tresor` in Zimmertresor)
LANGUAGES: dict[str, Words] = {
    "en": Words(
        password=r"password|pasword|passwrod|passowrd|paswrd|pssword|passwd\b|pswd\b|login\b|"
        r"wi-?fi\s+key\b|"
        r"network\s+key\b|wpa2?\s+key\b|pre-?shared\s+key\b|psk\b|shared\s+secret\b|"
        r"community\s+string\b",
        pin=r"pin\d?(?:\s+(?:code|number))?\b|puk\d?(?:\s+code)?\b|passcode\b|combination\b|"
        r"combo\b|" + _CODES + r"|disarm\b|key\s?code\b|key\s?box\b|lock\s?box\b|key\s+safe\b|"
        r"keysafe\b|code\s+(?:for|to|of)\s+the\s+"
        r"(?:front\s+|back\s+|side\s+)?(?:door|gate|alarm|garage|safe|keypad|lock|building|shed|"
        r"lockbox|padlock)\b",
        phrase=r"pass\s?phrase|secret\s+phrase\b",
        code=r"code\b",
        lock=r"safe\b|keypad\b|padlock\b|locker\b|bike\s+lock\b|lock\b",
        alarm=r"alarm\b",
        thing=r"door|gate|garage|alarm|safe\b|keypad|lock|intercom|building|entrance|entry|"
        r"shed|mailbox|storage|bike|atm\b",
        lead=r"is|was|are|now|it's|'s|’s|(?:set|changed|reset|updated)\s+to|becomes|"
        r"opens\s+with|unlocks\s+with",
    ),
    "ar": Words(
        password=r"كلم[ةه]\s+(?:ال)?(?:مرور|سر)(?:ه|ها|ي|ك|نا|هم|كم)?|باسورد|باسوورد|"
        r"رمز\s+(?:ال)?(?:مرور|دخول)|كود\s+(?:ال)?واي\s?فاي",
        either=r"رقم\s+(?:ال)?سري|رمز\s+(?:ال)?سري|كود\s+(?:ال)?(?:باب|بوابة|خزنة|إنذار|انذار|دخول)|"
        r"رمز\s+(?:ال)?(?:باب|بوابة|خزنة|إنذار|انذار|قفل)",
        pin=r"pin\b",
        phrase=r"عبار[ةه]\s+(?:ال)?(?:مرور|سر)",
        code=r"رمز|رقم|كود",
        lock=r"خزن[ةه]|خزان[ةه]|قفل",
        alarm=r"إنذار|انذار",
        thing=r"باب|بواب|خزن|خزان|قفل|إنذار|انذار|مبنى|عمار|مدخل|كراج|جراج|صندوق|دراج",
        wifi=r"واي\s?فاي|وايفاي",
        lead=r"هي|هو|هى|أصبحت|أصبح|صارت|الآن|الان|إلى|الى",
        joined=True,
    ),
    "bn": Words(
        password=r"পাসও(?:\u09df|\u09af\u09bc)ার্ড|পাসো(?:\u09df|\u09af\u09bc)ার্ড|পাসওয়াড",
        pin=r"পিন(?:\s*(?:কোড|নম্বর|নাম্বার))?|গোপন\s+নম্বর",
        phrase=r"পাসফ্রেজ|গোপন\s+বাক্য",
        wifi=r"ও(?:\u09df|\u09af\u09bc)াই-?ফাই",
        code=r"কোড|নম্বর|নাম্বার",
        lock=r"তালা|সেফ|লকার|সিন্দুক|ভল্ট",
        alarm=r"অ্যালার্ম|এলার্ম",
        thing=r"দরজা|গেট|তালা|লকার|সেফ|সিন্দুক|অ্যালার্ম|এলার্ম|বিল্ডিং|ভবন|আলমারি|গ্যারেজ|সাইকেল|"
        r"dorja|darja|tala\b",
        lead=r"হলো|হল|হচ্ছে|বদলে|এখন|করে|দি(?:\u09df|\u09af\u09bc)ে",
        after=r"হলো|হল|আছে|রাখা|করেছি|করা|দি(?:\u09df|\u09af\u09bc)েছি",
        joined=True,
    ),
    "cs": Words(
        password=r"hesl(?:o|a|u|em|e|y|ech|ům)\b|hesel\b",
        pin=r"pin(?:\s+kód\w*)?\b|vstupní\s+kód\b|přístupový\s+kód\b|bezpečnostní\s+kód\b|"
        r"odemykací\s+kód\b|číselný\s+kód\w*|kód\s+(?:k|ke|od|do|na)\s+(?:dveř|vchod|alarm|"
        r"trezor|zámk|zámek|bran|garáž|schránk|skříňk|sejf)",
        phrase=r"přístupová\s+fráz[ei]\b|heslová\s+fráz[ei]\b",
        code=r"kód\w*|kombinac\w*",
        lock=r"trezor\w*|sejf\w*|zámek\b|zámku\b|visací\s+zámek\b|kódový\s+zámek\b|skříňk\w*",
        alarm=r"alarm\w*",
        thing=r"dveř|dveri|vchod|alarm|trezor|sejf|zámek|zámk|brán|bran[auy]|garáž|schránk|"
        r"skříň|domofon|zvonek|vrat",
        lead=r"je|jsou|zní|bylo|byl|zůstává|zůstalo|na|teď|nyní|nově|změněn\w*\s+na",
    ),
    "da": Words(
        password=r"kodeord(?:et|ene)?|wi-?fi-?kode(?:n)?|"
        r"wi-?fi-?adgangskode(?:n)?|netværksnøgle(?:n)?",
        either=r"adgangskode(?:n|r|rne)?",
        pin=r"pin-?kode(?:n)?|d[øo]rkode(?:n)?|portkode(?:n)?|alarmkode(?:n)?|l[åa]sekode(?:n)?|"
        r"kodelås(?:en)?|kombination(?:en)?\b",
        phrase=r"adgangssætning(?:en)?|kodesætning(?:en)?",
        code=r"kode(?:n|r|rne)?\b",
        lock=r"pengeskab(?:et)?|safen\b|hængelås(?:en)?|cykellås(?:en)?|skab(?:et)?\b",
        alarm=r"alarm(?:en)?\b",
        thing=r"dør|port|alarm|safe|pengeskab|lås|skab|garage|opgang|indgang|postkasse|låge|"
        r"cykel|boks",
        lead=r"er|var|bliver|blev|hedder|nu|til|på|lyder|med",
        joined=True,
    ),
    "de": Words(
        password=r"passw(?:ort|örter)|kennw(?:ort|örter)|wlan-?(?:schl(?:ü|ue|u)ssel|key)|"
        r"wifi-?(?:schl(?:ü|ue|u)ssel|key)|wi-fi-?(?:schlüssel|key)|netzwerk-?schl(?:ü|ue)ssel|"
        r"wpa2?-?schlüssel",
        pin=r"pin(?:-?code|-?nummer)?\b|geheimzahl|türcode|tuercode|tür-code|torcode|alarmcode|"
        r"zugangscode|tresorcode|garagencode|schlosscode|hauscode|zahlenschloss|kombination\b|"
        r"entsperrcode|sicherheitscode|zahlencode|code\s+(?:für|vom|von|zur|zum)\s+(?:die\s+|den\s+"
        r"|das\s+)?(?:tür|tor|haustür|garage|tresor|alarm|safe|schloss|briefkasten|keller)",
        phrase=r"passphrase|passsatz|merksatz",
        code=r"code\b|zahlenkombination\b",
        lock=r"tresor\w*|safe\b|fahrradschloss\w*|vorhängeschloss\w*|schließfach\w*|spind\w*|"
        r"schlüsselsafe\w*|schlüsselkasten\w*",
        alarm=r"alarmanlage\w*|alarm\b",
        thing=r"tür|tor\b|garage|tresor|safe|alarm|schloss|briefkasten|keller|spind|"
        r"schließfach|eingang|pforte|fahrrad",
        lead=r"ist|lautet|sind|war|wäre|bleibt|heißt|jetzt|nun|auf|in",
        joined=True,
    ),
    "el": Words(
        password=r"συνθηματικ\w*",
        either=r"κωδικ\w*",  # (a card's PIN too)
        pin=r"pin\b",
        phrase=r"φράση\s+πρόσβασης|συνθηματική\s+φράση",
        lock=r"χρηματοκιβώτι\w*|λουκέτ\w*|θυρίδ\w*|κλειδαρι\w*|ντουλάπ\w*",
        alarm=r"συναγερμ\w*",
        thing=r"πόρτ|εξώπορτ|συναγερμ|χρηματοκιβώτι|θυρίδ|λουκέτ|κλειδαρι|ντουλάπ|γκαράζ|κτίρι|"
        r"είσοδ|αυλόπορτ",
        lead=r"είναι|ήταν|σε|τώρα|έγινε",
    ),
    "es": Words(
        password=r"contraseñas?\b|contrasenas?\b",
        either=r"clave\b",  # (a card's PIN too)
        pin=r"pin\b|c[oó]digo\s+(?:pin|secreto|de\s+seguridad|del?\s+(?:la\s+)?(?:portal|puerta|"
        r"alarma|garaje|caja\s+fuerte|candado|acceso|desbloqueo|entrada|trastero|buzón|"
        r"ascensor))\b|combinación\b|n[uú]mero\s+secreto\b",
        phrase=r"frase\s+(?:de\s+contraseña|secreta|de\s+paso)\b",
        code=r"c[oó]digo\b",
        lock=r"caja\s+fuerte\b|candado\b|taquilla\b|casillero\b",
        alarm=r"alarma\b",
        thing=r"puerta|portal|port[oó]n|alarma|caja\s+fuerte|candado|garaje|taquilla|casillero|"
        r"buz[oó]n|trastero|edificio|bici|cochera|entrada|ascensor",
        lead=r"es|era|son|será|ahora|a|queda|quedó|puse|por",
    ),
    "fa": Words(
        password=r"رمز\s*عبور|رمز\s*ورود|گذرواژه|کلمه\s*(?:ی\s*|\u200cی\s*)?عبور|پسورد|پسوورد|"
        r"رمز\s*وای\u200c?فای|رمز\s*وایفای|رمز\s*اینترنت",
        either=r"رمز",
        pin=r"پین(?:\s*کد)?|کد\s*پین|رمز\s*کارت|رمز\s*دوم|pin\b",
        phrase=r"عبارت\s*عبور|عبارت\s*رمز",
        wifi=r"وای\u200c?فای|وایفای",
        code=r"کد",
        lock=r"گاوصندوق|قفل|کمد",
        alarm=r"دزدگیر|آژیر",
        thing=r"درب|دزدگیر|گاوصندوق|صندوق|قفل|کمد|پارکینگ|ساختمان|آیفون|دوچرخه|آژیر|ورودی",
        lead=r"است|هست|به|اکنون|الان|شد",
        after=r"است|هست|می\u200cباشد|میباشد|هستش",
        joined=True,
    ),
    "fi": Words(
        password=r"salasan\w*|salis\w*|tunnussan\w*|verkkoavai\w*",
        pin=r"pin(?:-?koodi\w*)?\b|tunnuslu\w*|ovikoodi\w*|porttikoodi\w*|h[äa]lytyskoodi\w*|"
        r"avauskoodi\w*|lukkokoodi\w*",
        phrase=r"tunnuslau\w*|salasanalau\w*",
        code=r"koodi\w*",
        # (not a compound with koodi, the code's word: `hälytinkoodi`)
        lock=r"tallelokero(?!\w*koodi)\w*|kassakaap(?!\w*koodi)\w*|riippulukko(?!\w*koodi)\w*|"
        r"riippulukon\b|lukko\b|lukon\b|lokero(?!\w*koodi)\w*",
        alarm=r"hälytin\b|hälyttim(?!\w*koodi)\w*",
        thing=r"ovi|oven|portti|portin|rappu|porras|hälyt|halyt|tallelokero|kassakaap|kaap|lukko|"
        r"lukon|lokero|posti|varasto|autotalli|pyörä",
        lead=r"on|oli|nyt|vaihdettu|muutettu|muotoon",
        joined=True,
    ),
    "fr": Words(
        password=r"mots?\s+de\s+passe\b|mdp\b|code\s+wi-?fi\b|clé\s+(?:wi-?fi|wpa2?|de\s+"
        r"sécurité)\b",
        pin=r"code\s+pin\b|pin\b|digicode\b|code\s+(?:de\s+la\s+porte|du\s+portail|d'accès|"
        r"d'entrée|de\s+l'alarme|du\s+cadenas|du\s+coffre|de\s+l'immeuble|du\s+garage|"
        r"de\s+l'interphone|de\s+déverrouillage|de\s+la\s+carte|secret|confidentiel)(?:-fort)?|"
        r"combinaison\b",
        phrase=r"phrase\s+(?:secrète|de\s+passe)\b",
        code=r"code\b",
        lock=r"coffre(?:-fort)?\b|cadenas\b|antivol\b|casier\b|boîte\s+à\s+clés?\b",
        alarm=r"alarme\b",
        thing=r"porte|portail|alarme|coffre|cadenas|antivol|casier|immeuble|interphone|garage|"
        r"boîte|vélo|entrée|résidence|bâtiment",
        lead=r"est|était|sera|devient|reste|c'est|à|maintenant|désormais|mis|par|en|sur",
    ),
    "he": Words(
        password=r"סיסמ(?:ה|א|ת|אות|ות)|ססמ(?:ה|א)|פאסוורד",
        either=r"קוד\s+(?:ה)?(?:סודי|כניסה|גישה|אזעקה|לדלת|הדלת)|קוד\s+של\s+(?:ה)?(?:דלת|אזעקה|"
        r"כספת|שער|בניין)|קוד\s+ל(?:ה)?(?:כספת|שער|בניין|אזעקה|לובי|חניה)",
        pin=r"pin\b",
        phrase=r"משפט\s+(?:ה)?(?:סיסמה|סיסמא)",
        code=r"קוד",
        lock=r"כספת|מנעול|לוקר|ארונית",
        alarm=r"אזעקה",
        thing=r"דלת|שער|אזעקה|כספת|מנעול|לוקר|ארונית|בניין|חניה|לובי|אינטרקום|אופניים",
        wifi=r"וויפי|ויפי|וואי\s?פאי",
        lead=r"היא|הוא|זה|זו|עכשיו|כעת|ל-|ל־",
        joined=True,
    ),
    "hi": Words(
        password=r"पासवर्ड|पास्वर्ड|कूटशब्द|पासकोड",
        pin=r"पिन(?:\s+(?:कोड|नंबर))?|pin\b|लॉक\s+कोड|डोर\s+कोड|दरवाज़े\s+का\s+कोड|दरवाजे\s+का\s+कोड",
        phrase=r"पासफ़्रेज़|पासफ्रेज",
        code=r"कोड",
        lock=r"तिजोरी|लॉकर|ताला|सेफ",
        alarm=r"अलार्म",
        thing=r"दरवाज|गेट|अलार्म|तिजोरी|लॉकर|ताला|सेफ|बिल्डिंग|इमारत|गैरेज|साइकिल|darwaz|tijori|"
        r"taala|tala\b",
        lead=r"बदलकर|अब",
        after=r"है|हैं|था|hai",
        joined=True,
    ),
    "hu": Words(
        password=r"jelsz[óoa]\w*",
        phrase=r"jelmondat\w*",
        code=r"kód\w*",
        # (not a compound with kód, the code's word: `riasztókódja`)
        lock=r"széf(?!\w*kód)\w*|lakat(?!\w*kód)\w*|trezor(?!\w*kód)\w*|szekrény(?!\w*kód)\w*",
        pin=r"pin(?:\s*-?kód\w*)?\b|számzár\w*|kódzár\w*",
        alarm=r"riasztó(?!\w*kód)\w*",
        thing=r"ajtó|ajto|kapu|riasztó|széf|trezor|lakat|zár|szekrény|garázs|kaputelefon|"
        r"lépcsőház|bejárat|postaláda|kerékpár|bicikli",
        lead=r"most|lett|mostantól",
        first=r"az|a",
        joined=True,
    ),
    "id": Words(
        password=r"kata\s+sandi(?:-?nya)?\b|sandi(?:-?nya)?\b|password(?:-?nya)?\b|pw-?nya\b|"
        r"pass-?nya\b",
        pin=r"pin(?:-?nya)?\b|kode\s+(?:pintu|brankas|alarm|akses|keamanan|rahasia|kunci|gembok|"
        r"garasi)\b",
        phrase=r"frasa\s+sandi\b",
        code=r"kode(?:nya)?\b",
        lock=r"brankas\b|gembok\b|loker\b",
        alarm=r"alarm\b",
        thing=r"pintu|pagar|gerbang|alarm|brankas|gembok|kunci|loker|lemari|garasi|gedung|sepeda",
        lead=r"adalah|ialah|yaitu|yakni|jadi|menjadi|sekarang|diganti|diubah|itu|ini",
    ),
    "it": Words(
        password=r"password\b|parola\s+d'ordine\b|parola\s+chiave\b|chiave\s+(?:wi-?fi|wpa2?|"
        r"di\s+rete)\b",
        pin=r"codice\s+pin\b|pin\b|codice\s+(?:del\s+cancello|della\s+porta|dell'allarme|"
        r"di\s+accesso|del\s+lucchetto|della\s+cassaforte|del\s+portone|d'ingresso|segreto|"
        r"di\s+sblocco|del\s+bancomat|del\s+citofono|del\s+garage|del\s+box)|combinazione\b",
        phrase=r"frase\s+(?:segreta|d'accesso|di\s+accesso)\b",
        code=r"codice\b",
        lock=r"cassaforte\b|lucchetto\b|armadietto\b",
        alarm=r"allarme\b|antifurto\b",
        thing=r"cancell|porta|portone|allarme|antifurto|cassaforte|lucchett|armadiett|garage|"
        r"citofono|bici|ingresso|palazzo",
        lead=r"è|é|e'|era|sarà|ora|adesso|diventa|rimane|resta|messo|messa|in",
    ),
    "ja": Words(
        password=r"パスワード|パスコード",
        phrase=r"パスフレーズ|合言葉",
        code=r"コード|番号|ナンバー",
        pin=r"暗証番号|暗証コード|pinコード|pin\b|ロック解除コード|解除コード|解錠番号|ロック番号|ダイヤル錠",
        lock=r"金庫|南京錠|ロッカー",
        alarm=r"警報|アラーム",
        thing=r"ドア|玄関|門|金庫|ロッカー|南京錠|鍵|錠|オートロック|アラーム|警報|ゲート|自転車|"
        r"セキュリティ|ポスト",
        lead=r"は|が|を|に|って",
        after=r"です|だ|でした|に変更",
        joined=True,
        spaced=False,
    ),
    "ko": Words(
        password=r"패스워드|암호(?![화문학])",
        phrase=r"패스프레이즈|암호\s?문구|비밀\s?문구",
        either=r"비밀\s?번호|비번|도어락\s*번호|현관\s*번호",
        pin=r"pin\b|핀\s*번호",
        code=r"번호|코드",
        lock=r"금고|자물쇠|사물함|번호키",
        alarm=r"경보기",
        thing=r"현관|도어락|금고|자물쇠|사물함|경보|알람|게이트|자전거|대문|출입문|보관함|번호키",
        lead=r"은|는|이|가|으로|로|이제|지금",
        first=r"이게|이건|이거",
        after=r"이에요|예요|입니다|이야|이다|임|으로|로",
        joined=True,
    ),
    "ms": Words(
        password=r"kata\s+laluan(?:nya)?|katalaluan(?:nya)?|kata\s+rahsia\b",
        pin=r"pin(?:-?nya)?\b|nombor\s+pin\b|kod\s+pin\b",
        phrase=r"frasa\s+laluan\b|frasa\s+rahsia\b",
        code=r"kod(?:nya)?\b",
        lock=r"peti\s+besi\b|peti\s+keselamatan\b|mangga\b|loker\b",
        alarm=r"penggera\b",
        thing=r"pintu|pagar|penggera|alarm|peti\s+besi|peti\s+keselamatan|kunci|mangga|loker|"
        r"almari|garaj|bangunan|basikal",
        lead=r"ialah|adalah|sekarang|kini|kepada|ke",
    ),
    "nl": Words(
        password=r"wachtwoord(?:en)?|paswoord(?:en)?\b|ww\b|wifi-?code\b|wifi-?sleutel\b|"
        r"netwerksleutel\b",
        pin=r"pin(?:code)?\b|deurcode|alarmcode|toegangscode|poortcode|kluiscode|garagecode|"
        r"inlogcode|beveiligingscode|cijfercode|slotcode|combinatie\b|code\s+van\s+(?:de|het)\s+"
        r"(?:kluis|deur|voordeur|poort|alarm|garage|fietsslot|slot|brievenbus|berging)\b",
        phrase=r"wachtzin\b|wachtwoordzin\b",
        code=r"code\b",
        lock=r"kluis(?:je)?\b|hangslot\b|fietsslot\b|cijferslot\b|sleutelkluis(?:je)?\b",
        alarm=r"alarm\b",
        thing=r"deur|poort|alarm|kluis|slot|garage|berging|brievenbus|fietsenstalling|fiets|hek|"
        r"portiek|ingang",
        lead=r"is|was|luidt|wordt|nu|naar|op|blijft|in",
        joined=True,
    ),
    "no": Words(
        password=r"passord(?:et|ene)?|nettverksnøkkel(?:en)?",
        pin=r"pin-?kode(?:n)?|d[øo]rkode(?:n)?|portkode(?:n)?|alarmkode(?:n)?|l[åa]sekode(?:n)?|"
        r"tallkode(?:n)?|kodelås(?:en)?|kombinasjon(?:en)?\b",
        phrase=r"passordfrase(?:n)?|passfrase(?:n)?",
        code=r"kode(?:n|r|ne)?\b",
        lock=r"safen\b|pengeskap(?:et)?|hengelås(?:en)?|sykkellås(?:en)?|skap(?:et)?\b",
        alarm=r"alarm(?:en)?\b",
        thing=r"dør|port|alarm|safe|pengeskap|lås|skap|garasje|oppgang|inngang|postkasse|sykkel|"
        r"bod",
        lead=r"er|var|blir|ble|heter|nå|til|på|lyder|med",
        joined=True,
    ),
    "pl": Words(
        password=r"has(?:ło|ła|łem|łu|le|eł|lo|la)\b|haśle\b",
        pin=r"pin(?:u|em)?\b|kod\s+(?:pin|do\s+(?:drzwi|domofonu|bramy|sejfu|klatki|furtki|"
        r"alarmu|garażu|szafki|kłódki)|alarmu|dostępu|odblokowania|zabezpieczający)\b|szyfr\b",
        phrase=r"fraz(?:a|ę|y)\b",
        code=r"kod\w*",
        lock=r"sejf\w*|kłódk\w*|szafk\w*|skrytk\w*|zamek\s+szyfrowy\b",
        alarm=r"alarm\w*",
        thing=r"drzwi|bram|furtk|domofon|alarm|sejf|kłódk|szafk|garaż|klatk|skrytk|rower|wejści",
        lead=r"to|jest|brzmi|było|teraz|na",
    ),
    "pt": Words(
        password=r"palavra[- ]passe\b|chave\s+(?:do\s+)?wi-?fi\b",
        either=r"senhas?\b",  # (a card's PIN too: "senha do cartão")
        pin=r"pin\b|c[oó]digo\s+(?:pin|secreto|de\s+desbloqueio|de\s+seguran[çc]a|do\s+(?:portão|"
        r"cofre|alarme|cadeado|prédio)|da\s+porta|de\s+acesso|de\s+entrada)\b",
        phrase=r"frase\s+(?:secreta|-?senha|de\s+senha)\b|frase[- ]passe\b",
        code=r"c[oó]digo\b",
        lock=r"cofre\b|cadeado\b|cacifo\b|arm[áa]rio\b",
        alarm=r"alarme\b",
        thing=r"porta|portão|portao|alarme|cofre|cadeado|garagem|cacifo|armário|prédio|predio|"
        r"condomínio|interfone|bicicleta|entrada|portaria|multibanco|cart[ãa]o",
        lead=r"é|era|será|agora|para|pra|fica|ficou|virou|continua|com",
    ),
    # Japanese says パス for a password ("NASのパス -> X"), and for a path: only before a colon,
    # an arrow or a particle
    "ja-pass": Words(
        password=r"パス(?![ワコフポタケスロー])",
        lead=r"は|が|って",
        bare=False,
        joined=True,
        spaced=False,
    ),
    # Spanish says "contra" for a password ("contra del NAS -> X"), a word for "against" too: only
    # before a colon, an arrow or a copula
    "es-contra": Words(password=r"contra\b", lead=r"es|era|ahora", bare=False),
    # Portuguese says "a pass" for a PIN or a password ("A pass do tablet é 2713"): only after
    # a copula, or "pass" in any language would take the number after it
    "pt-pass": Words(
        either=r"pass\b", lead=r"é|era|será|agora|fica|ficou|virou|continua", bare=False
    ),
    "ro": Words(
        password=r"parol(?:a|ă|e|ei|ele)\b",
        pin=r"pin(?:-?ul(?:ui)?)?\b",
        phrase=r"fraz(?:a|ă)\s+(?:de\s+acces|secret(?:ă|a)|parol(?:ă|a))\b",
        code=r"cod(?:ul|uri|urile|ului)?\b|cifru\w*|combinați\w*|combinati\w*",
        lock=r"seif(?:ul|ului)?\b|lac[ăa]t\w*|dulap\w*",
        alarm=r"alarm(?:a|ă|ei)?\b",
        thing=r"ușă|usa|ușii|usii|ușa|poart|porț|porti|interfon|alarm|seif|lacăt|lacat|dulap|garaj|bloc|"
        r"scar|intrare|cutie|biciclet",
        lead=r"este|e|era|acum|devine|pus|setat|la|în|in",
    ),
    "ru": Words(
        password=r"парол(?:ь|я|ю|ем|е|и|ей)\b|пасс\b",
        pin=r"пин(?:-?код\w*)?\b|pin\b|кодов\w*\s+замок\b|код\s+(?:от|для|к)\s+(?:домофона|двери|подъезда|сейфа|"
        r"сигнализации|калитки|ворот|замка|шкафчика|ячейки|гаража|квартиры)\b|код\s+доступа\b|"
        r"код\s+разблокировки\b|секретный\s+код\b",
        phrase=r"кодов(?:ая|ую|ой)\s+фраз\w*|парольн(?:ая|ую|ой)\s+фраз\w*|кодовое\s+слово\b",
        either=r"комбинаци\w*",
        code=r"код\w*",
        lock=r"сейф\w*|навесной\s+замок\b|замок\b|замка\b|шкафчик\w*|ячейк\w*",
        alarm=r"сигнализаци\w*",
        thing=r"двер|подъезд|домофон|сейф|сигнализац|замок|замк|калитк|ворот|шкафчик|ячейк|"
        r"гараж|велосипед|вход",
        lead=r"это|теперь|сейчас|он|она|будет|был|стал|остался|стоит|на",
    ),
    "sk": Words(
        password=r"hesl(?:o|a|u|om|á)\b",
        pin=r"pin(?:\s+kód\w*)?\b",
        phrase=r"prístupová\s+fráz\w*|heslová\s+fráz\w*",
        code=r"kód\w*",
        lock=r"trezor\w*|sejf\w*|zámok\b|zámku\b|visiaci\s+zámok\b|kódový\s+zámok\b|skrink\w*",
        alarm=r"alarm\w*",
        thing=r"dver|bran|vchod|trezor|sejf|zámok|zámk|skrin|skriň|alarm|garáž|schránk|domofón|"
        r"vrát|bicyk",
        lead=r"je|sú|znie|bolo|bol|teraz|na|zostáva",
    ),
    "sv": Words(
        password=r"lösenord(?:et|en)?|losenord(?:et|en)?|lösen\b|wifi-?nyckel(?:n)?\b",
        pin=r"pin(?:-?kod(?:en)?)?\b|larmkod(?:en)?|portkod(?:en)?|dörrkod(?:en)?|"
        r"säkerhetskod(?:en)?|upplåsningskod(?:en)?|grindkod(?:en)?|kodlås(?:et)?|"
        r"kod(?:en)?\s+till\s+(?:dörren|porten|larmet|"
        r"kassaskåpet|boxen|förrådet|garaget|cykellåset|hänglåset)\b|kombination(?:en)?\b",
        phrase=r"lösenfras(?:en)?",
        code=r"kod(?:en|er|erna)?\b",
        lock=r"kassaskåp(?:et)?|värdeskåp(?:et)?|hänglås(?:et)?|cykellås(?:et)?|skåp(?:et)?\b",
        alarm=r"larm(?:et)?\b",
        thing=r"dörr|port|larm|kassaskåp|värdeskåp|skåp|lås|box|förråd|garage|brevlåda|entré|"
        r"cykel",
        lead=r"är|var|blir|blev|heter|nu|till|med",
        joined=True,
    ),
    "th": Words(
        password=r"รหัสผ่าน|พาสเวิร์ด|พาสเวิด|รหัสไวไฟ|รหัสวายฟาย",
        pin=r"รหัสพิน|พิน|รหัสบัตร|รหัสเอทีเอ็ม|รหัส\s*atm|รหัสปลดล็อก",
        phrase=r"วลีรหัสผ่าน|วลีรหัส|วลีลับ",
        wifi=r"ไวไฟ|วายฟาย",
        code=r"รหัส",
        lock=r"ตู้เซฟ|เซฟ|แม่กุญแจ|ล็อกเกอร์|ล็อคเกอร์",
        alarm=r"สัญญาณกันขโมย|กันขโมย",
        thing=r"ประตู|เซฟ|กันขโมย|สัญญาณ|กุญแจ|ล็อกเกอร์|ล็อคเกอร์|อาคาร|รั้ว|โรงรถ|จักรยาน|ตู้",
        lead=r"คือ|เป็น|ตอนนี้",
        after=r"ครับ|ค่ะ|คะ|นะ|แล้ว|จ้า",
        joined=True,
        spaced=False,
    ),
    "tl": Words(
        password=r"password(?:\s+ko)?\b|passcode\b",
        pin=r"pin\b",
        phrase=r"passphrase\b",
        code=r"code\b|koda\b",
        lock=r"kandado\b|safe\b|locker\b",
        alarm=r"alarm\b",
        thing=r"pinto|gate|safe|alarm|locker|kandado|padlock|kaha|garahe|gusali|bisikleta|bahay",
        lead=r"ay|ng|ngayon",
        first=r"ang",
    ),
    "tr": Words(
        # (also without its ş, as typed on a keyboard without it)
        password=r"parola\w*",
        either=r"şifre(?!li|len|le)\w*|sifre(?!li|len|le)\w*",  # (not şifreli: encrypted)
        pin=r"pin(?:\s+kodu)?\b|kapı\s+(?:kodu|şifresi)\b|alarm\s+(?:kodu|şifresi)\b|"
        r"kasa\s+(?:kodu|şifresi)\b|kilit\s+(?:kodu|şifresi)\b|giriş\s+kodu\b|güvenlik\s+kodu\b",
        phrase=r"parola\s+(?:öbeği|cümlesi)\b|şifre\s+cümlesi\b|gizli\s+cümle\b",
        code=r"kod(?:u|unu|um|umuz)?\b",
        lock=r"kasa\w*|kilit\w*|kilid\w*|asma\s+kilit\w*|dolab\w*",
        alarm=r"alarm\w*",
        thing=r"kapı|kapi|alarm|kasa|kilit|dolap|dolab|garaj|bina|bisiklet|otopark|giriş",
        lead=r"artık|şu|şimdi|oldu",
        after=r"olarak|oldu|yaptım",
    ),
    "uk": Words(
        password=r"парол(?:ь|я|ю|ем|і|ів)\b",
        pin=r"пін(?:-?код\w*)?\b|кодов\w*\s+замок\b|код\s+(?:від|до|для)\s+(?:домофона|домофону|дверей|під'їзду|"
        r"сейфа|сигналізації|замка|воріт|гаража|квартири)\b|код\s+доступу\b|"
        r"код\s+розблокування\b|секретний\s+код\b",
        phrase=r"кодов(?:а|у|ої)\s+фраз\w*|парольн(?:а|у|ої)\s+фраз\w*|фраза-пароль\w*",
        code=r"код\w*",
        lock=r"сейф\w*|замок\b|замка\b|шафк\w*",
        either=r"комбінаці\w*",
        alarm=r"сигналізаці\w*",
        thing=r"двер|під'їзд|під’їзд|домофон|сейф|сигналізац|замок|замк|хвіртк|ворі|ворот|шафк|"
        r"гараж|велосипед|вхід",
        lead=r"це|тепер|зараз|він|вона|буде|став|на",
    ),
    "vi": Words(
        password=r"mk\b|pass\s+wi-?fi\b",
        either=r"mật\s+khẩu\b|mật\s+mã\b|mat\s+khau\b|mat\s+ma\b",  # (an ATM card's PIN too)
        pin=r"mã\s+pin\b|pin\b|mã\s+(?:cửa|két|khóa|mở\s+cửa|mở\s+khóa|báo\s+động|bảo\s+mật|"
        r"cổng)\b",
        phrase=r"câu\s+mật\s+khẩu\b|cụm\s+mật\s+khẩu\b",
        code=r"mã\b",
        lock=r"két\s+sắt\b|ổ\s+khóa\b|khóa\s+(?:xe|số|cửa|tủ)\b|khoá\s+(?:xe|số|cửa|tủ)\b|tủ\s+đồ\b",
        alarm=r"báo\s+động\b",
        thing=r"cửa|cổng|két|khóa|khoá|báo\s+động|tủ|nhà\s+xe|tòa\s+nhà|toà\s+nhà|xe\s+đạp|"
        r"chung\s+cư",
        lead=r"là|giờ\s+là|bây\s+giờ\s+là|mới\s+là|thành",
    ),
    "zh": Words(
        password=r"口令",
        either=r"密码|密碼|门禁码|門禁碼|开锁码|開鎖碼|帳密|账密",
        pin=r"pin[码碼]|解除码|解除碼|解锁码|解鎖碼|开门码|開門碼|密码锁|密碼鎖",
        phrase=r"密码短语|密碼短語|密语|密語|助记词|助記詞",
        code=r"号码|號碼|码|碼",
        lock=r"保险箱|保險箱|保险柜|保險櫃|挂锁|掛鎖|储物柜|儲物櫃|柜子|櫃子",
        alarm=r"报警器|報警器|警报器|警報器",
        thing=r"门|門|保险|保險|报警|報警|警报|警報|锁|鎖|柜|櫃|车库|車庫|大楼|大樓|单车|單車|"
        r"自行车|自行車",
        lead=r"是|为|為|改成|改为|改為|设为|設為|设置为|設定為|设置成|設置成|设成|設成|换成|換成|变成|"
        r"變成",
        joined=True,
        spaced=False,
    ),
    # "PW: X", "wifi: X", "WLAN → X" in any language (but "wifi Planta2" names the network, and
    # `WIFI:T:WPA;…` is a QR code's payload, read by its own rule)
    "*": Words(
        password=r"pwd?\b|psw\b|passw\b|pword\b",
        wifi=r"wi-?fi\b(?!-|:[a-z]:)|wlan\b(?!-)|вай-?фай|واي\s?فاي|וויפי|ויפי|वाई-?फाई|ワイファイ|와이파이|"
        r"无线网|無線網路",
        bare=False,
        everywhere=True,
    ),
}
