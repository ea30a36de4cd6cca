"""Build tests/corpus/elicitations.jsonl: the labelled corpus of elicitation requests.

Run ``.venv/bin/python tests/corpus/build.py`` after editing; the output is committed and read by
tests/test_corpus.py. Labels say what a security reviewer expects under the *default* policy
(docs/policies.md), written before and independently of the detectors: never tune a label to make
a detector pass. Sources (all written from knowledge, no text or data copied; see README.md):
the MCP specification's elicitation examples, public secret-token *formats* (values are synthetic
and generated here with a fixed seed), Unicode confusable look-alikes (UTS #39 idea), WHATWG URL
host spellings, cloud vendors' documented pre-signed URL parameter names, and autofill field
vocabulary in many languages (the vocabulary, not any project's patterns).
"""

from __future__ import annotations

import base64
import json
import random
import string
import zlib
from pathlib import Path
from typing import Any

OUT = Path(__file__).with_name("elicitations.jsonl")
SEED = 20261129
RNG = random.Random(SEED)
B62 = string.digits + string.ascii_letters

Case = dict[str, Any]
CASES: list[Case] = []


def add(
    label: str, category: str, source: str, params: Any, capabilities: str | None = None
) -> None:
    case: Case = {
        "id": f"{category}-{sum(1 for c in CASES if c['category'] == category) + 1:03d}",
        "label": label,
        "category": category,
        "source": source,
        "params": params,
    }
    if capabilities is not None:
        case["capabilities"] = capabilities
    CASES.append(case)


def form(message: str, props: dict[str, Any], required: list[str] | None = None) -> Any:
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return {"message": message, "requestedSchema": schema}


def s(title: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "title": title, **extra}


def url(u: str, message: str = "Please continue in your browser to connect your account.") -> Any:
    return {"mode": "url", "message": message, "url": u, "elicitationId": "550e8400-e29b-41d4"}


def rand(alphabet: str, n: int) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def b62(n: int, width: int) -> str:
    out = ""
    while n:
        n, r = divmod(n, 62)
        out = B62[r] + out
    return out.rjust(width, "0")


def github_token(prefix: str = "ghp_") -> str:
    body = rand(B62, 30)
    return prefix + body + b62(zlib.crc32(body.encode()), 6)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt() -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64url(
        json.dumps({"sub": "1234567890", "name": "A User", "iat": 1764000000}).encode()
    )
    return f"{header}.{payload}.{b64url(RNG.randbytes(32))}"


SPEC = "MCP specification 2025-11-25 elicitation (example shape)"
VOCAB = "autofill field vocabulary (multilingual, written from knowledge)"
TOKENS = "public secret-token formats (gitleaks rule ideas, MIT); synthetic values"
CONF = "Unicode confusables (UTS #39 idea); look-alike hosts written by hand"
WHATWG = "WHATWG URL host parsing (numeric IPv4 spellings)"
VENDOR = "cloud vendor pre-signed URL docs (parameter names); synthetic values"
OWN = "own (security review)"

# --- multilingual vocabulary -----------------------------------------------------------------
# lang: (intro message, password, otp, card number, security code, expiry, sensitive id)
LANGS: dict[str, dict[str, str]] = {
    "en": {
        "login": "Your session expired. Sign in again to continue.",
        "password": "Password",
        "otp": "Verification code",
        "otp_msg": "Enter the code we just sent to your phone.",
        "pay_msg": "Complete your payment to activate the subscription.",
        "card": "Card number",
        "cvv": "Security code (CVV)",
        "exp": "Expiry date",
        "id": "Social Security Number",
        "id_msg": "We need this for your tax form.",
        "name": "Full name",
        "email": "Email address",
        "company": "Company",
        "city": "City",
        "seats": "Number of seats",
        "feedback": "Feedback",
        "profile_msg": "Please tell us a bit about yourself.",
        "booking_msg": "Where and for how many people should I book the table?",
        "feedback_msg": "How was your experience with the assistant today?",
    },
    "de": {
        "login": "Ihre Sitzung ist abgelaufen. Bitte melden Sie sich erneut an.",
        "password": "Passwort",
        "otp": "Bestätigungscode",
        "otp_msg": "Geben Sie den Code ein, den wir per SMS gesendet haben.",
        "pay_msg": "Schließen Sie die Zahlung ab, um das Abo zu aktivieren.",
        "card": "Kartennummer",
        "cvv": "Prüfnummer (CVC)",
        "exp": "Gültig bis",
        "id": "Steuer-Identifikationsnummer",
        "id_msg": "Wir benötigen diese Angabe für die Steuererklärung.",
        "name": "Vollständiger Name",
        "email": "E-Mail-Adresse",
        "company": "Firma",
        "city": "Stadt",
        "seats": "Anzahl der Plätze",
        "feedback": "Rückmeldung",
        "profile_msg": "Erzählen Sie uns bitte etwas über sich.",
        "booking_msg": "Wo und für wie viele Personen soll ich den Tisch reservieren?",
        "feedback_msg": "Wie zufrieden waren Sie heute mit dem Assistenten?",
    },
    "fr": {
        "login": "Votre session a expiré. Reconnectez-vous pour continuer.",
        "password": "Mot de passe",
        "otp": "Code de vérification",
        "otp_msg": "Saisissez le code que nous venons de vous envoyer par SMS.",
        "pay_msg": "Finalisez votre paiement pour activer l'abonnement.",
        "card": "Numéro de carte",
        "cvv": "Cryptogramme visuel",
        "exp": "Date d'expiration",
        "id": "Numéro de sécurité sociale",
        "id_msg": "Nous en avons besoin pour votre dossier.",
        "name": "Nom complet",
        "email": "Adresse e-mail",
        "company": "Entreprise",
        "city": "Ville",
        "seats": "Nombre de places",
        "feedback": "Commentaires",
        "profile_msg": "Parlez-nous un peu de vous.",
        "booking_msg": "Où et pour combien de personnes dois-je réserver la table ?",
        "feedback_msg": "Comment s'est passée votre expérience avec l'assistant ?",
    },
    "es": {
        "login": "Tu sesión ha caducado. Inicia sesión de nuevo para continuar.",
        "password": "Contraseña",
        "otp": "Código de verificación",
        "otp_msg": "Introduce el código que te enviamos por SMS.",
        "pay_msg": "Completa el pago para activar la suscripción.",
        "card": "Número de tarjeta",
        "cvv": "Código de seguridad",
        "exp": "Fecha de caducidad",
        "id": "Número de pasaporte",
        "id_msg": "Lo necesitamos para la reserva del vuelo.",
        "name": "Nombre completo",
        "email": "Correo electrónico",
        "company": "Empresa",
        "city": "Ciudad",
        "seats": "Número de asientos",
        "feedback": "Comentarios",
        "profile_msg": "Cuéntanos un poco sobre ti.",
        "booking_msg": "¿Dónde y para cuántas personas reservo la mesa?",
        "feedback_msg": "¿Qué tal tu experiencia con el asistente hoy?",
    },
    "pt": {
        "login": "Sua sessão expirou. Entre novamente para continuar.",
        "password": "Senha",
        "otp": "Código de verificação",
        "otp_msg": "Digite o código que enviamos para o seu celular.",
        "pay_msg": "Conclua o pagamento para ativar a assinatura.",
        "card": "Número do cartão",
        "cvv": "Código de segurança",
        "exp": "Validade",
        "id": "CPF",
        "id_msg": "Precisamos do seu CPF para emitir a nota fiscal.",
        "name": "Nome completo",
        "email": "Endereço de e-mail",
        "company": "Empresa",
        "city": "Cidade",
        "seats": "Número de lugares",
        "feedback": "Comentários",
        "profile_msg": "Conte-nos um pouco sobre você.",
        "booking_msg": "Onde e para quantas pessoas devo reservar a mesa?",
        "feedback_msg": "Como foi sua experiência com o assistente hoje?",
    },
    "it": {
        "login": "La sessione è scaduta. Accedi di nuovo per continuare.",
        "password": "Password",
        "otp": "Codice di verifica",
        "otp_msg": "Inserisci il codice che ti abbiamo inviato via SMS.",
        "pay_msg": "Completa il pagamento per attivare l'abbonamento.",
        "card": "Numero della carta",
        "cvv": "Codice di sicurezza",
        "exp": "Data di scadenza",
        "id": "Codice fiscale",
        "id_msg": "Ci serve per la fattura.",
        "name": "Nome e cognome",
        "email": "Indirizzo email",
        "company": "Azienda",
        "city": "Città",
        "seats": "Numero di posti",
        "feedback": "Commenti",
        "profile_msg": "Raccontaci qualcosa di te.",
        "booking_msg": "Dove e per quante persone devo prenotare il tavolo?",
        "feedback_msg": "Com'è andata oggi con l'assistente?",
    },
    "nl": {
        "login": "Je sessie is verlopen. Log opnieuw in om door te gaan.",
        "password": "Wachtwoord",
        "otp": "Verificatiecode",
        "otp_msg": "Voer de code in die we per sms hebben gestuurd.",
        "pay_msg": "Rond je betaling af om het abonnement te activeren.",
        "card": "Kaartnummer",
        "cvv": "Beveiligingscode",
        "exp": "Vervaldatum",
        "id": "Burgerservicenummer (BSN)",
        "id_msg": "We hebben dit nodig voor je belastingaangifte.",
        "name": "Volledige naam",
        "email": "E-mailadres",
        "company": "Bedrijf",
        "city": "Stad",
        "seats": "Aantal plaatsen",
        "feedback": "Feedback",
        "profile_msg": "Vertel ons iets over jezelf.",
        "booking_msg": "Waar en voor hoeveel personen moet ik de tafel reserveren?",
        "feedback_msg": "Hoe was je ervaring met de assistent vandaag?",
    },
    "ru": {
        "login": "Сеанс истёк. Войдите снова, чтобы продолжить.",
        "password": "Пароль",
        "otp": "Код подтверждения",
        "otp_msg": "Введите код, который мы отправили вам в SMS.",
        "pay_msg": "Завершите оплату, чтобы активировать подписку.",
        "card": "Номер карты",
        "cvv": "Код безопасности (CVV)",
        "exp": "Срок действия",
        "id": "Номер паспорта",
        "id_msg": "Это нужно для оформления билета.",
        "name": "Полное имя",
        "email": "Адрес электронной почты",
        "company": "Компания",
        "city": "Город",
        "seats": "Количество мест",
        "feedback": "Отзыв",
        "profile_msg": "Расскажите немного о себе.",
        "booking_msg": "Где и на сколько человек забронировать столик?",
        "feedback_msg": "Как вам сегодня работа с ассистентом?",
    },
    "pl": {
        "login": "Sesja wygasła. Zaloguj się ponownie, aby kontynuować.",
        "password": "Hasło",
        "otp": "Kod weryfikacyjny",
        "otp_msg": "Wpisz kod, który wysłaliśmy SMS-em.",
        "pay_msg": "Dokończ płatność, aby aktywować subskrypcję.",
        "card": "Numer karty",
        "cvv": "Kod CVV",
        "exp": "Data ważności",
        "id": "Numer PESEL",
        "id_msg": "Potrzebujemy go do umowy.",
        "name": "Imię i nazwisko",
        "email": "Adres e-mail",
        "company": "Firma",
        "city": "Miasto",
        "seats": "Liczba miejsc",
        "feedback": "Opinia",
        "profile_msg": "Opowiedz nam trochę o sobie.",
        "booking_msg": "Gdzie i dla ilu osób mam zarezerwować stolik?",
        "feedback_msg": "Jak oceniasz dzisiejszą pracę z asystentem?",
    },
    "tr": {
        "login": "Oturumunuzun süresi doldu. Devam etmek için tekrar giriş yapın.",
        "password": "Şifre",
        "otp": "Doğrulama kodu",
        "otp_msg": "Telefonunuza gönderdiğimiz kodu girin.",
        "pay_msg": "Aboneliği etkinleştirmek için ödemeyi tamamlayın.",
        "card": "Kart numarası",
        "cvv": "Güvenlik kodu",
        "exp": "Son kullanma tarihi",
        "id": "T.C. Kimlik Numarası",
        "id_msg": "Fatura için gerekli.",
        "name": "Ad soyad",
        "email": "E-posta adresi",
        "company": "Şirket",
        "city": "Şehir",
        "seats": "Koltuk sayısı",
        "feedback": "Geri bildirim",
        "profile_msg": "Bize biraz kendinizden bahsedin.",
        "booking_msg": "Masayı nerede ve kaç kişilik ayırayım?",
        "feedback_msg": "Bugün asistanla deneyiminiz nasıldı?",
    },
    "ja": {
        "login": "セッションの有効期限が切れました。続行するには再度ログインしてください。",
        "password": "パスワード",
        "otp": "確認コード",
        "otp_msg": "SMSで送信したコードを入力してください。",
        "pay_msg": "サブスクリプションを有効にするにはお支払いを完了してください。",
        "card": "カード番号",
        "cvv": "セキュリティコード",
        "exp": "有効期限",
        "id": "マイナンバー",
        "id_msg": "税務手続きに必要です。",
        "name": "氏名",
        "email": "メールアドレス",
        "company": "会社名",
        "city": "市区町村",
        "seats": "席数",
        "feedback": "ご意見",
        "profile_msg": "あなたについて少し教えてください。",
        "booking_msg": "どこで何名様分の席を予約しますか？",
        "feedback_msg": "本日のアシスタントの対応はいかがでしたか？",
    },
    "zh": {
        "login": "您的会话已过期，请重新登录以继续。",
        "password": "密码",
        "otp": "验证码",
        "otp_msg": "请输入我们通过短信发送给您的验证码。",
        "pay_msg": "请完成付款以激活订阅。",
        "card": "信用卡号",
        "cvv": "安全码",
        "exp": "有效期",
        "id": "身份证号码",
        "id_msg": "办理入住需要此信息。",
        "name": "姓名",
        "email": "电子邮件地址",
        "company": "公司",
        "city": "城市",
        "seats": "座位数",
        "feedback": "反馈",
        "profile_msg": "请简单介绍一下您自己。",
        "booking_msg": "在哪里预订，几位用餐？",
        "feedback_msg": "您今天对助手的体验如何？",
    },
    "ko": {
        "login": "세션이 만료되었습니다. 계속하려면 다시 로그인하세요.",
        "password": "비밀번호",
        "otp": "인증번호",
        "otp_msg": "문자로 보내드린 인증번호를 입력하세요.",
        "pay_msg": "구독을 활성화하려면 결제를 완료하세요.",
        "card": "카드 번호",
        "cvv": "보안 코드(CVC)",
        "exp": "유효기간",
        "id": "주민등록번호",
        "id_msg": "본인 확인에 필요합니다.",
        "name": "이름",
        "email": "이메일 주소",
        "company": "회사",
        "city": "도시",
        "seats": "좌석 수",
        "feedback": "의견",
        "profile_msg": "자기소개를 간단히 해 주세요.",
        "booking_msg": "어디에서 몇 명으로 예약할까요?",
        "feedback_msg": "오늘 어시스턴트 이용은 어떠셨나요?",
    },
    "ar": {
        "login": "انتهت صلاحية الجلسة. سجّل الدخول مرة أخرى للمتابعة.",
        "password": "كلمة المرور",
        "otp": "رمز التحقق",
        "otp_msg": "أدخل الرمز الذي أرسلناه إلى هاتفك.",
        "pay_msg": "أكمل الدفع لتفعيل الاشتراك.",
        "card": "رقم البطاقة",
        "cvv": "رمز الأمان",
        "exp": "تاريخ الانتهاء",
        "id": "رقم الهوية الوطنية",
        "id_msg": "نحتاج إليه لإصدار الفاتورة.",
        "name": "الاسم الكامل",
        "email": "البريد الإلكتروني",
        "company": "الشركة",
        "city": "المدينة",
        "seats": "عدد المقاعد",
        "feedback": "ملاحظات",
        "profile_msg": "أخبرنا قليلاً عن نفسك.",
        "booking_msg": "أين ولكم شخصاً أحجز الطاولة؟",
        "feedback_msg": "كيف كانت تجربتك مع المساعد اليوم؟",
    },
    "hi": {
        "login": "आपका सत्र समाप्त हो गया है। जारी रखने के लिए फिर से लॉग इन करें।",
        "password": "पासवर्ड",
        "otp": "सत्यापन कोड",
        "otp_msg": "हमने आपके फ़ोन पर जो OTP भेजा है उसे दर्ज करें।",
        "pay_msg": "सदस्यता सक्रिय करने के लिए भुगतान पूरा करें।",
        "card": "कार्ड नंबर",
        "cvv": "सीवीवी",
        "exp": "समाप्ति तिथि",
        "id": "आधार नंबर",
        "id_msg": "केवाईसी के लिए आवश्यक है।",
        "name": "पूरा नाम",
        "email": "ईमेल पता",
        "company": "कंपनी",
        "city": "शहर",
        "seats": "सीटों की संख्या",
        "feedback": "प्रतिक्रिया",
        "profile_msg": "कृपया अपने बारे में थोड़ा बताइए।",
        "booking_msg": "टेबल कहाँ और कितने लोगों के लिए बुक करूँ?",
        "feedback_msg": "आज सहायक के साथ आपका अनुभव कैसा रहा?",
    },
    "sv": {
        "login": "Din session har gått ut. Logga in igen för att fortsätta.",
        "password": "Lösenord",
        "otp": "Verifieringskod",
        "otp_msg": "Ange koden vi skickade till din telefon.",
        "pay_msg": "Slutför betalningen för att aktivera prenumerationen.",
        "card": "Kortnummer",
        "cvv": "Säkerhetskod (CVC)",
        "exp": "Giltig till",
        "id": "Personnummer",
        "id_msg": "Vi behöver det för avtalet.",
        "name": "Fullständigt namn",
        "email": "E-postadress",
        "company": "Företag",
        "city": "Stad",
        "seats": "Antal platser",
        "feedback": "Återkoppling",
        "profile_msg": "Berätta lite om dig själv.",
        "booking_msg": "Var och för hur många personer ska jag boka bordet?",
        "feedback_msg": "Hur var din upplevelse med assistenten i dag?",
    },
}


def build_multilingual() -> None:
    for lang, v in LANGS.items():
        src = f"{VOCAB}; language {lang}"
        # Credential phishing, named field and generic key with a localised title only.
        add("block", "secret-field", src, form(v["login"], {"password": s(v["password"])}))
        add(
            "block",
            "secret-field",
            src,
            form(v["login"], {"user": s(v["email"]), "field_2": s(v["password"])}),
        )
        add("block", "otp-field", src, form(v["otp_msg"], {"code": s(v["otp"])}))
        card_form = {
            "card_number": s(v["card"]),
            "expiry": s(v["exp"]),
            "cvc": s(v["cvv"]),
        }
        add("block", "payment-field", src, form(v["pay_msg"], card_form))
        add("warn", "sensitive-pii-field", src, form(v["id_msg"], {"national_id": s(v["id"])}))
        # Ordinary forms in the same language.
        add(
            "allow",
            "benign-form",
            src,
            form(
                v["profile_msg"],
                {
                    "name": s(v["name"]),
                    "email": s(v["email"], format="email"),
                    "company": s(v["company"]),
                },
                ["name"],
            ),
        )
        add(
            "allow",
            "benign-form",
            src,
            form(
                v["booking_msg"],
                {
                    "city": s(v["city"]),
                    "seats": {"type": "integer", "title": v["seats"], "minimum": 1, "maximum": 20},
                    "date": s("Date", format="date"),
                },
            ),
        )
        add(
            "allow",
            "benign-form",
            src,
            form(
                v["feedback_msg"],
                {
                    "rating": {"type": "string", "enum": ["1", "2", "3", "4", "5"]},
                    "feedback": s(v["feedback"], maxLength=2000),
                },
            ),
        )
        add(
            "allow",
            "benign-form",
            src,
            form(v["booking_msg"], {"seats": {"type": "number", "title": v["seats"]}}),
        )


# --- English (and mixed) look-alikes and obfuscations ---------------------------------------

BENIGN_LOOKALIKES: list[tuple[str, dict[str, Any]]] = [
    (
        "Team settings",
        {"require_2fa": {"type": "boolean", "title": "Require two-factor authentication?"}},
    ),
    ("Notifications", {"sms_alerts": {"type": "boolean", "title": "Send SMS alerts"}}),
    (
        "Security settings",
        {"mfa_enabled": {"type": "boolean", "title": "MFA enabled", "default": True}},
    ),
    (
        "Password policy",
        {
            "password_min_length": {
                "type": "integer",
                "title": "Minimum password length",
                "minimum": 8,
            }
        },
    ),
    ("Password policy", {"password_policy": {"type": "string", "enum": ["standard", "strict"]}}),
    (
        "Account help",
        {"forgot_password": {"type": "boolean", "title": "Did you forget your password?"}},
    ),
    ("Create an API key", {"api_key_name": s("Name for the new API key")}),
    (
        "Create a key pair",
        {"key_size": {"type": "integer", "title": "RSA key size", "minimum": 2048}},
    ),
    ("Connect your IdP", {"token_url": s("Token endpoint", format="uri")}),
    ("Rotate a secret", {"secret_name": s("Name of the secret to rotate")}),
    (
        "Message options",
        {"pin_message": {"type": "boolean", "title": "Pin this message to the channel?"}},
    ),
    ("Where is my order?", {"order_number": s("Order number")}),
    ("Track a parcel", {"tracking_number": s("Tracking number")}),
    ("Kundendienst", {"kundennummer": s("Kundennummer")}),
    (
        "Lieferadresse",
        {"strasse": s("Straße"), "hausnummer": s("Hausnummer"), "plz": s("Postleitzahl")},
    ),
    ("Contact details", {"phone": s("Phone number"), "name": s("Name")}),
    ("Pick a username", {"username": s("Username", minLength=3)}),
    (
        "Keep me signed in",
        {"remember_me": {"type": "boolean", "title": "Remember me on this device"}},
    ),
    (
        "New Trello card",
        {"card_title": s("Card title"), "list": s("List", enum=["To do", "Doing", "Done"])},
    ),
    ("Code review", {"comment": s("Code review comment", maxLength=500)}),
    (
        "Shipping",
        {"zip_code": s("ZIP code"), "country_code": s("Country", enum=["US", "CA", "MX"])},
    ),
    ("Checkout", {"promo_code": s("Promo code (optional)")}),
    ("Invite friends", {"referral_code": s("Referral code (optional)")}),
    ("Name this session", {"session_name": s("Session name")}),
    (
        "Share settings",
        {"expiry_days": {"type": "integer", "title": "Link expiry (days)", "maximum": 30}},
    ),
    ("Which branch?", {"branch": s("Git branch name", default="main")}),
    ("Commit", {"commit_message": s("Commit message")}),
    ("Grant access", {"access_level": s("Access level", enum=["read", "write", "admin"])}),
    (
        "Sign-in method",
        {
            "auth_method": s(
                "Sign-in method",
                oneOf=[
                    {"const": "password", "title": "Password"},
                    {"const": "sso", "title": "Single sign-on"},
                    {"const": "passkey", "title": "Passkey"},
                ],
            )
        },
    ),
    ("Add your SSH key label", {"key_label": s("Label for your SSH key")}),
    ("Contract", {"expiration_date": s("Contract expiration date", format="date")}),
    ("Gift", {"gift_message": s("Message for the gift card", maxLength=200)}),
    ("Budget", {"budget": {"type": "number", "title": "Monthly budget (USD)", "minimum": 0}}),
    ("Notes", {"private_notes": s("Private notes for yourself")}),
    ("Account", {"account_name": s("Account display name")}),
    ("GitHub", {"github_username": s("GitHub username")}),
    (
        "Read the docs",
        {"ack": {"type": "boolean", "title": "I have read CONTRIBUTING.md and SECURITY.md"}},
    ),
    ("Upgrade", {"version": s("Target version", description="e.g. v1.2.3 or 2.0.0-rc.1")}),
    ("Meeting", {"time": s("Start time", description="For example 10.30 or 14.00")}),
    (
        "Pricing",
        {
            "confirm": {
                "type": "boolean",
                "title": "Confirm the price of 12.50 EUR per seat, i.e. 150.00 EUR per year?",
            }
        },
    ),
    ("Scripts", {"script": s("Script to run", enum=["deploy.sh", "build.py", "lib.rs"])}),
    (
        "Security questions",
        {
            "use_questions": {
                "type": "boolean",
                "title": "Enable security questions for account recovery?",
            }
        },
    ),
    ("Card preferences", {"card_theme": s("Card colour", enum=["blue", "green"])}),
    ("Passkeys", {"passkey_name": s("Name for this passkey")}),
    (
        "Token budget",
        {"max_tokens": {"type": "integer", "title": "Max tokens per response", "maximum": 8192}},
    ),
    (
        "Crypto newsletter",
        {
            "topics": {
                "type": "array",
                "items": {"type": "string", "enum": ["bitcoin", "wallets", "seed phrase safety"]},
            }
        },
    ),
    (
        "PIN code of the office door? No: choose a meeting room",
        {"room": s("Meeting room", enum=["Blue", "Red"])},
    ),
]

SECRET_FORMS: list[tuple[str, str, dict[str, Any]]] = [
    ("secret-field", "Verify your wallet", {"seed_phrase": s("Recovery phrase (12 words)")}),
    ("secret-field", "Connect your OpenAI account", {"api_key": s("API key")}),
    ("secret-field", "Deploy access", {"private_key": s("SSH private key", maxLength=5000)}),
    ("secret-field", "Connect GitHub", {"token": s("Personal access token")}),
    ("secret-field", "Unlock your card", {"pin": s("PIN", pattern="^[0-9]{4}$")}),
    (
        "secret-field",
        "Online banking",
        {"login": s("Online banking login"), "pin": s("Online banking PIN")},
    ),
    ("secret-field", "Account recovery", {"maiden": s("What is your mother's maiden name?")}),
    ("secret-field", "Account recovery", {"pet": s("What was the name of your first pet?")}),
    ("secret-field", "Kontowiederherstellung", {"frage": s("Geburtsname Ihrer Mutter")}),
    ("secret-field", "Connect AWS", {"aws_secret_access_key": s("AWS secret access key")}),
    ("secret-field", "Wi-Fi setup", {"wifi": s("Wi-Fi password")}),
    ("secret-field", "Autocomplete", {"current-password": s("Current")}),
    ("secret-field", "Change it", {"new-password": s("New")}),
    ("otp-field", "Autocomplete", {"one-time-code": s("Code")}),
    (
        "otp-field",
        "Enter the 6-digit code from your authenticator app",
        {"code": s("Code", pattern="^[0-9]{6}$")},
    ),
    ("otp-field", "Two-factor authentication", {"totp": s("Authenticator code")}),
    ("otp-field", "We texted you a one-time password", {"value": s("One-time password")}),
    (
        "payment-field",
        "Card",
        {"cc-number": s("Number"), "cc-csc": s("CSC"), "cc-exp": s("Expires")},
    ),
    (
        "payment-field",
        "Pay now",
        {"card": s("Credit card number"), "cvv": s("CVV", pattern="^[0-9]{3,4}$")},
    ),
    ("secret-field", "Login", {"passphrase": s("Passphrase")}),
    ("secret-field", "Access", {"client_secret": s("OAuth client secret")}),
    ("secret-field", "Database", {"db_password": s("Database password")}),
]

# Obfuscations of "password": each a real trick, each must still block.
OBFUSCATED: list[tuple[str, str]] = [
    ("раssword", "Cyrillic р and а"),
    ("pаsswоrd", "Cyrillic а and о"),
    ("ｐａｓｓｗｏｒｄ", "fullwidth"),
    ("p a s s w o r d", "letter spacing"),
    ("p.a.s.s.w.o.r.d", "dotted letter spacing"),
    ("p-a-s-s-w-o-r-d", "dashed letter spacing"),
    ("pass\u200bword", "zero-width space"),
    ("pass\u00adword", "soft hyphen"),
    ("PASSWORD", "upper case"),
    ("𝐩𝐚𝐬𝐬𝐰𝐨𝐫𝐝", "mathematical bold"),
    ("Pαssword", "Greek alpha"),
    ("Passw0rd", "digit zero"),
    ("userPassword", "camelCase"),
    ("user_pass_word", "snake_case split"),
    ("Passwort (Pаsswort)", "German with Cyrillic а"),
    ("ПАРОЛЬ", "Russian upper case"),
    ("ﾊﾟｽﾜｰﾄﾞ", "halfwidth katakana"),
]


def build_english() -> None:
    for message, props in BENIGN_LOOKALIKES:
        add("allow", "benign-lookalike", OWN + "; false-positive guard", form(message, props))
    for category, message, props in SECRET_FORMS:
        add("block", category, VOCAB, form(message, props))
    for title, trick in OBFUSCATED:
        add(
            "block",
            "obfuscated-secret",
            f"{OWN}; obfuscation: {trick}",
            form("Sign in to continue", {"field": s(title)}),
        )
    add(
        "block",
        "obfuscated-secret",
        OWN + "; obfuscation in key",
        form("Sign in", {"раssword": {"type": "string"}}),
    )
    add(
        "block",
        "obfuscated-secret",
        OWN + "; message makes a generic field secret",
        form("Enter your password to confirm the transfer.", {"value": s("Value")}),
    )
    add(
        "block",
        "obfuscated-secret",
        OWN + "; message makes a generic field OTP",
        form("Enter the code we texted you.", {"code": s("Code")}),
    )


# --- links in forms ---------------------------------------------------------------------------

LINKS: list[tuple[str, Any]] = [
    (
        "https in message",
        form("Verify at https://secure-login.example-verify.com now", {"ok": {"type": "boolean"}}),
    ),
    (
        "markdown link",
        form(
            "Please [re-authenticate here](https://evil.test/login).", {"ok": {"type": "boolean"}}
        ),
    ),
    (
        "www link",
        form("Visit www.account-verify.net to keep your account", {"ok": {"type": "boolean"}}),
    ),
    ("bare domain", form("Go to paypal-secure-check.com and confirm", {"ok": {"type": "boolean"}})),
    (
        "html anchor",
        form('Click <a href="https://evil.test">here</a>', {"ok": {"type": "boolean"}}),
    ),
    ("autolink", form("Open <https://evil.test/x> to continue", {"ok": {"type": "boolean"}})),
    (
        "javascript in description",
        form("Settings", {"x": s("Name", description="javascript:alert(document.cookie)")}),
    ),
    (
        "data url in enum title",
        form(
            "Pick",
            {
                "x": s(
                    "Choice", oneOf=[{"const": "a", "title": "data:text/html;base64,PHNjcmlwdD4="}]
                )
            },
        ),
    ),
    (
        "http ip literal",
        form("Download the update from http://10.0.0.7/update.exe", {"ok": {"type": "boolean"}}),
    ),
    ("link in title", form("Survey", {"x": s("Rate us at https://survey.evil.test")})),
    (
        "link in enum",
        form(
            "Pick a mirror",
            {"m": s("Mirror", enum=["https://mirror1.evil.test", "https://mirror2.evil.test"])},
        ),
    ),
    (
        "link in default of text field",
        form("Profile", {"bio": s("Bio", default="Find me at https://evil.test/me")}),
    ),
    ("protocol-relative", form("Open //evil.test/login to continue", {"ok": {"type": "boolean"}})),
    ("file scheme", form("Open file:///etc/passwd for details", {"ok": {"type": "boolean"}})),
    (
        "link in key title multi-select",
        form(
            "Pick",
            {
                "t": {
                    "type": "array",
                    "items": {"anyOf": [{"const": "a", "title": "See https://evil.test"}]},
                }
            },
        ),
    ),
    (
        "new gTLD bare domain",
        form("Confirm at account-security.xyz today", {"ok": {"type": "boolean"}}),
    ),
    (
        "mailto scheme",
        form("Reply to mailto:support@evil.test with your details", {"ok": {"type": "boolean"}}),
    ),
    (
        "fullwidth scheme",
        form("Visit ｈｔｔｐｓ://evil.test to continue", {"ok": {"type": "boolean"}}),
    ),
    (
        "zero-width inside URL",
        form("Visit https://evil\u200b.test/login", {"ok": {"type": "boolean"}}),
    ),
    (
        "link in description",
        form("Connect", {"user": s("User", description="Sign in first at https://evil.test/sso")}),
    ),
]


def build_links() -> None:
    for name, params in LINKS:
        add("block", "clickable-url", f"{OWN}; {name}", params)
    add(
        "warn",
        "example-url",
        OWN + "; example in a format:uri field",
        form(
            "Where is your homepage?",
            {
                "homepage": s(
                    "Homepage", format="uri", description="For example https://example.com"
                )
            },
        ),
    )
    add(
        "warn",
        "example-url",
        OWN + "; default of a format:uri field",
        form(
            "Webhook", {"hook": s("Webhook URL", format="uri", default="https://example.com/hook")}
        ),
    )
    add(
        "warn",
        "example-url",
        OWN + "; example in a format:uri field",
        form(
            "Repository",
            {
                "repo": s(
                    "Repository URL", format="uri", description="e.g. https://github.com/owner/repo"
                )
            },
        ),
    )


# --- secret values ----------------------------------------------------------------------------


def build_secret_values() -> None:
    aws = "AKIA" + rand("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
    values = {
        "aws access key id": aws,
        "github pat": github_token(),
        "github oauth": github_token("gho_"),
        "slack bot token": f"xoxb-{rand(string.digits, 12)}-{rand(string.digits, 13)}-{rand(B62, 24)}",
        "stripe live key": "sk_live_" + rand(B62, 24),
        "jwt": jwt(),
        "pem private key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA"
        + rand(B62, 60)
        + "\n-----END RSA PRIVATE KEY-----",
        "openai key": "sk-proj-" + rand(B62, 20) + "T3BlbkFJ" + rand(B62, 20),
        "anthropic key": "sk-ant-api03-" + rand(B62 + "-_", 93) + "AA",
        "gitlab pat": "glpat-" + rand(B62 + "-_", 20),
        "google api key": "AIza" + rand(B62 + "-_", 35),
        "npm token": "npm_" + rand(B62, 36),
    }
    where = ["default", "description", "message"]
    for i, (name, value) in enumerate(values.items()):
        spot = where[i % 3]
        if spot == "default":
            params = form("Confirm the configuration", {"cfg": s("Config", default=value)})
        elif spot == "description":
            params = form("Confirm", {"cfg": s("Config", description=f"Current value: {value}")})
        else:
            params = form(f"Your key is {value}. Confirm to continue.", {"ok": {"type": "boolean"}})
        add("block", "secret-value", f"{TOKENS}; {name} in {spot}", params)
    encoded = base64.b64encode(values["github pat"].encode()).decode()
    add(
        "block",
        "secret-value",
        TOKENS + "; base64-encoded token",
        form("Confirm", {"cfg": s("Config", default=encoded)}),
    )
    # Look-alikes that are not secrets.
    benign = {
        "uuid": "550e8400-e29b-41d4-a716-446655440000",
        "git sha": "9fceb02d0ae598e95dc970b74767f19372d61af8",
        "placeholder": "sk_test_your_key_here",
        "docs variable": "${GITHUB_TOKEN}",
        "short word": "password123 (the old default, already rotated)",
    }
    for name, value in benign.items():
        add(
            "allow",
            "benign-value",
            f"{OWN}; {name}",
            form(f"Is this the value from your config file? {value}", {"ok": {"type": "boolean"}}),
        )


# --- invisible characters, schema, envelope ---------------------------------------------------


def build_structure() -> None:
    add(
        "block",
        "invisible-chars",
        OWN,
        form("Please confirm\u202e the transfer", {"ok": {"type": "boolean"}}),
    )
    add(
        "block",
        "invisible-chars",
        OWN,
        form("Confirm", {"ok": {"type": "boolean", "title": "Agree\u200b\u200b\u200b"}}),
    )
    add("block", "invisible-chars", OWN, form("Name", {"name": s("Name\u2066hidden\u2069")}))
    add(
        "block",
        "schema-violation",
        SPEC,
        form(
            "Address", {"address": {"type": "object", "properties": {"street": {"type": "string"}}}}
        ),
    )
    add("block", "schema-violation", SPEC, form("Ref", {"x": {"$ref": "#/$defs/secret"}}))
    add("block", "schema-violation", SPEC, form("Type", {"x": {"type": "file"}}))
    add(
        "block",
        "schema-violation",
        SPEC,
        form("Array", {"x": {"type": "array", "items": {"type": "object"}}}),
    )
    add(
        "block",
        "schema-violation",
        SPEC,
        {"message": "m", "requestedSchema": {"type": "array", "items": {"type": "string"}}},
    )
    add(
        "block",
        "schema-violation",
        SPEC,
        form("Fmt", {"x": {"type": "string", "format": "password"}}),
    )
    add("block", "malformed", SPEC, {"mode": "sms", "message": "m"})
    add("block", "malformed", SPEC, {"mode": "url", "message": "Open this"})
    add(
        "block",
        "malformed",
        SPEC,
        {"message": 42, "requestedSchema": {"type": "object", "properties": {}}},
    )
    add("block", "malformed", SPEC, ["not", "an", "object"])
    add("block", "mode-not-declared", SPEC, url("https://example.com/connect"), capabilities="form")
    add("block", "mode-not-declared", SPEC, form("Name?", {"name": s("Name")}), capabilities="none")
    add("block", "mode-not-declared", SPEC, form("Name?", {"name": s("Name")}), capabilities="url")
    add("block", "oversize", OWN, form("x" * 70_000, {"a": s("A")}))
    add("block", "oversize", OWN, form("Many", {f"f{i}": s(f"Field {i}") for i in range(80)}))
    add("block", "oversize", OWN, form("Enum", {"e": s("E", enum=[f"v{i}" for i in range(800)])}))
    # The spec's own form examples (shape from the 2025-11-25 elicitation page).
    add(
        "allow",
        "spec-example",
        SPEC,
        form("Please provide your GitHub username", {"name": {"type": "string"}}, ["name"]),
    )
    add(
        "allow",
        "spec-example",
        SPEC,
        form(
            "Please provide your contact information",
            {
                "name": {"type": "string", "description": "Your full name"},
                "email": {"type": "string", "format": "email", "description": "Your email address"},
                "age": {"type": "number", "minimum": 18, "description": "Your age"},
            },
            ["name", "email"],
        ),
    )
    add(
        "allow",
        "spec-example",
        SPEC,
        url("https://mcp.example.com/ui/set_api_key", "Please provide your API key to continue."),
    )
    add(
        "allow",
        "spec-example",
        SPEC,
        url("https://mcp.example.com/connect?elicitationId=550e8400-e29b-41d4-a716-446655440000"),
    )
    add("allow", "mode-declared", SPEC, form("Name?", {"name": s("Name")}), capabilities="form")
    add("allow", "mode-declared", SPEC, url("https://example.com/connect"), capabilities="url")


# --- URL mode ---------------------------------------------------------------------------------


def build_urls() -> None:
    state, challenge = rand(B62, 24), rand(B62 + "-_", 43)
    oauth_hosts = [
        "https://github.com/login/oauth/authorize",
        "https://accounts.google.com/o/oauth2/v2/auth",
        "https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
        "https://slack.com/oauth/v2/authorize",
        "https://auth.atlassian.com/authorize",
        "https://api.notion.com/v1/oauth/authorize",
        "https://linear.app/oauth/authorize",
        "https://www.dropbox.com/oauth2/authorize",
        "https://zoom.us/oauth/authorize",
        "https://login.salesforce.com/services/oauth2/authorize",
        "https://dev-123456.okta.com/oauth2/v1/authorize",
        "https://example.auth0.com/authorize",
        "https://gitlab.com/oauth/authorize",
        "https://connect.stripe.com/oauth/authorize",
        "https://discord.com/oauth2/authorize",
    ]
    for base in oauth_hosts:
        q = (
            f"?response_type=code&client_id=mcp-{rand(B62, 10)}&state={state}&scope=read%20write"
            f"&redirect_uri=https%3A%2F%2Fmcp.example.com%2Fcallback&code_challenge={challenge}"
            "&code_challenge_method=S256"
        )
        add(
            "allow",
            "oauth-url",
            "OAuth 2.1 authorization request parameters (RFC 6749/7636)",
            url(base + q),
        )
    for u in [
        "https://github.com/login/device?user_code=WDJB-MJHT",
        "https://microsoft.com/devicelogin",
        "https://www.google.com/device",
        "http://localhost:8080/callback",
        "http://127.0.0.1:3000/connect?elicitationId=abc123",
        "http://[::1]:8080/setup",
        "https://docs.python.org/3/library/json.html#json.dumps",
        "https://en.wikipedia.org/wiki/Phishing",
        "https://app.example.com/settings/integrations",
        "https://example.org/connect?elicitationId=7f9c0d2e&lang=en",
        "https://console.cloud.google.com/apis/credentials",
        "https://platform.openai.com/settings/organization/api-keys",
        "https://console.anthropic.com/settings/keys",
        "https://billing.stripe.com/p/login/test",
        "https://www.paypal.com/signin",
        "https://appleid.apple.com/",
        "https://id.atlassian.com/login",
        "https://mcp.example.com/ui/oauth/start?server=calendar",
        "https://example.com/path/with%20space/index.html",
        "https://calendar.example.net/connect?tz=Europe%2FBerlin&view=week",
    ]:
        add("allow", "benign-url", OWN, url(u))

    # Blocked URLs.
    for u in [
        "http://example.com/login",
        "http://accounts.example.net/oauth",
        "http://203.0.113.9.nip.io/login",
        "http://localhost.evil.test/x",
    ]:
        add("block", "non-https", OWN, url(u))
    for u in [
        "javascript:alert(document.cookie)",
        "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
        "file:///etc/passwd",
        "ftp://files.example.com/a",
        "vbscript:msgbox(1)",
        "JaVaScRiPt:alert(1)",
        "java\tscript:alert(1)",
    ]:
        add("block", "bad-scheme", OWN, url(u))
    for u in [
        "https://user@example.com/",
        "https://github.com@evil.test/login",
        "https://admin:hunter2@example.com/",
        "https://docs.example.org\\@evil.test/",
    ]:
        add("block", "userinfo", WHATWG if "\\" in u else OWN, url(u))
    for u in [
        "https://203.0.113.5/login",
        "https://3232235777/",
        "https://0xC0A80101/",
        "https://0300.0250.0.1/",
        "https://192.168.1/",
        "https://[2001:db8::1]/",
        "https://[::ffff:c0a8:101]/",
        "http://169.254.169.254/latest/meta-data/",
        "https://１９２.１６８.０.１/",
        "https://10.0.0.1:8443/admin",
    ]:
        add("block", "ip-literal", WHATWG, url(u))
    for u in [
        "https://аpple.com/account",
        "https://pаypal.com/signin",
        "https://gооgle.com/",
        "https://microsоft.com/login",
        "https://аmazon.com/ap/signin",
        "https://xn--80ak6aa92e.com/",
        "https://faceboоk.com/login",
        "https://netfliх.com/account",
        "https://githuЬ.com/login",
        "https://аррӏе.com/",
        "https://www.pаypal.com.evil.test/",
        "https://paypaӏ.com/",
    ]:
        add("block", "confusable-host", CONF, url(u))
    email = "jane.doe@gmail.com"
    for u in [
        f"https://example.com/verify?email={email}",
        "https://example.com/users/jane.doe%40gmail.com/confirm",
        "https://example.com/claim?ssn=536-22-8174",
        "https://example.com/pay?card=4111111111111111",
        "https://example.com/transfer?iban=DE89370400440532013000",
        "https://example.com/call?phone=%2B14155552671",
        "https://example.com/track?u=" + base64.b64encode(email.encode()).decode(),
        "https://example.com/track#email=" + email,
    ]:
        add("block", "pii-in-url", OWN, url(u))
    for u in [
        "https://example.com/cb?token=" + rand(B62, 32),
        "https://example.com/cb?api_key=" + rand(B62, 32),
        "https://example.com/login?password=hunter2",
        "https://example.com/cb?access_token=" + rand(B62, 40),
        "https://example.com/app?session=" + rand(B62, 32),
        "https://example.com/cb#access_token=" + rand(B62, 40) + "&token_type=bearer",
        "https://example.com/setup/" + github_token(),
        "https://example.com/cb?code=" + rand(B62, 20) + "&state=xyz",
        "https://example.com/cb?jwt=" + jwt(),
    ]:
        add("block", "credential-in-url", OWN, url(u))
    amz = (
        "https://bucket.s3.amazonaws.com/report.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        f"&X-Amz-Credential=AKIA{rand('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567', 16)}%2F20261129%2Fus-east-1%2Fs3%2Faws4_request"
        "&X-Amz-Date=20261129T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
        f"&X-Amz-Signature={rand('0123456789abcdef', 64)}"
    )
    for u in [
        amz,
        f"https://bucket.s3.amazonaws.com/a.pdf?AWSAccessKeyId=AKIA{rand('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567', 16)}&Expires=1764000000&Signature={rand(B62, 27)}%3D",
        f"https://storage.googleapis.com/b/o.pdf?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=sa%40p.iam.gserviceaccount.com&X-Goog-Signature={rand('0123456789abcdef', 64)}",
        f"https://acct.blob.core.windows.net/c/f.pdf?sv=2022-11-02&se=2026-12-01&sr=b&sp=r&sig={rand(B62, 43)}%3D",
        f"https://d111111abcdef8.cloudfront.net/v.mp4?Expires=1764000000&Signature={rand(B62, 40)}&Key-Pair-Id=K2JCJMDEHXQW5F",
        f"https://hooks.slack.com/services/T{rand(string.ascii_uppercase + string.digits, 8)}/B{rand(string.ascii_uppercase + string.digits, 8)}/{rand(B62, 24)}",
        f"https://discord.com/api/webhooks/{rand(string.digits, 18)}/{rand(B62 + '-_', 68)}",
        f"https://example.firebaseapp.com/__/auth/action?mode=resetPassword&oobCode={rand(B62, 40)}",
        f"https://example.com/magic/{jwt()}",
        f"https://example.com/reset/{rand(B62, 40)}",
    ]:
        add("block", "preauth-url", VENDOR, url(u))
    add(
        "block",
        "invisible-chars",
        OWN,
        url("https://example.com/connect", "Sign\u200b in to con\u200dtinue"),
    )
    add(
        "block",
        "invisible-chars",
        OWN,
        url("https://example.com/connect", "Approve \u202etransfer"),
    )
    add(
        "block",
        "clickable-url",
        OWN,
        url("https://example.com/connect", "Or use https://evil.test/alt if the button fails"),
    )
    add(
        "block",
        "secret-value",
        TOKENS,
        url("https://example.com/connect", "Use the key " + github_token() + " when asked"),
    )

    # Warnings: legitimate IDNs, typosquats, brand in a subdomain, PII in a message.
    for u in [
        "https://bücher.de/",
        "https://münchen.de/",
        "https://例え.jp/",
        "https://한국.kr/",
        "https://xn--bcher-kva.de/konto",
        "https://пример.рф/",
    ]:
        add("warn", "idn-host", "legitimate IDN (UTS #46)", url(u))
    for u in [
        "https://paypa1.com/signin",
        "https://rnicrosoft.com/",
        "https://paypal-login.com/",
        "https://g00gle.com/",
        "https://arnazon.com/",
    ]:
        add("warn", "typosquat", OWN, url(u))
    for u in [
        "https://paypal.com.account-check.net/",
        "https://login.microsoft.secure-verify.xyz/",
    ]:
        add("warn", "brand-subdomain", OWN, url(u))
    add(
        "warn",
        "pii-in-message",
        OWN,
        url("https://example.com/receipt", "We sent the receipt to jane.doe@gmail.com."),
    )
    add(
        "warn",
        "pii-in-message",
        OWN,
        form("Confirm the shipment for +1 415 555 2671?", {"ok": {"type": "boolean"}}),
    )
    add(
        "warn",
        "pii-in-message",
        OWN,
        form(
            "Is 4111 1111 1111 1111 the card you want to remove from your account?",
            {"ok": {"type": "boolean"}},
        ),
    )


def render() -> str:
    """The whole corpus as JSON lines (deterministic: fixed seed, fixed order)."""
    CASES.clear()
    RNG.seed(SEED)
    build_multilingual()
    build_english()
    build_links()
    build_secret_values()
    build_structure()
    build_urls()
    return "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in CASES)


def main() -> None:
    OUT.write_text(render(), encoding="utf-8")
    labels = {lab: sum(1 for c in CASES if c["label"] == lab) for lab in ("allow", "warn", "block")}
    print(f"wrote {len(CASES)} cases to {OUT.name}: {labels}")


if __name__ == "__main__":
    main()
