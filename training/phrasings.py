"""Training-only phrasings: more ways to ask each intent, openers, and section synonyms.

The held-out split is by template: ``generate_data.TEMPLATES`` keeps its last two templates of every intent for
evaluation. Everything here is training-only and never reaches an evaluation case (the generator draws from it
only for the train split, so the evaluation cases and their random draws do not change).

Why so many: a 135M model trained on six phrasings per intent learns the phrasings, not the request (unseen
wording sent "muadil" questions to ``search_drug`` and took openers like "Kızım" or "Hem" for drug names).
Same placeholders as ``TEMPLATES``: {d} drug, {a}/{b} two drugs, {s} section words, {w} kg, {y} years, {c} condition.
"""

from __future__ import annotations

TRAIN_ONLY_TEMPLATES: dict[str, dict[str, list[str]]] = {
    "usage": {
        "tr": [
            "{d} ne ilacı?",
            "{d} hangi rahatsızlık için?",
            "Merhaba, {d} ne işe yarıyor acaba?",
            "annem {d} kullanıyor, bu ilaç ne için?",
            "{d} adlı ilacı neden kullanırlar?",
            "reçetemde {d} var, ne için yazılmış olabilir?",
            "{d} ilacını tanıyor musunuz, ne işe yarar?",
            "Kızıma {d} verildi, bu ilaç ne için?",
            "{d} kullanım amacı nedir?",
            "{d} hangi durumlarda kullanılır?",
            "bu {d} denen ilaç ne?",
        ],
        "en": [
            "What is {d} prescribed for?",
            "why would someone take {d}?",
            "Hi, what is {d} for?",
            "My mom takes {d}. What does it treat?",
            "what's the purpose of {d}",
            "Could you tell me what {d} is used for?",
            "What condition is {d} for?",
            "{d}: what is it?",
            "The doctor prescribed {d} for my son. What does it do?",
            "Explain what {d} is.",
            "is {d} a painkiller or something else?",
        ],
    },
    "ingredient": {
        "tr": [
            "{d} hangi etken maddeyi taşıyor?",
            "{d} içeriğinde ne bulunuyor?",
            "{d} jenerik adı nedir?",
            "{d} etkin maddesi hangisi?",
            "bana {d} etken maddesini söyler misin?",
            "{d} ilacının etken maddesi",
        ],
        "en": [
            "{d} is made of what?",
            "generic name for {d}?",
            "tell me what {d} contains",
            "What is the main ingredient of {d}?",
        ],
    },
    "section": {
        "tr": [
            "{d} prospektüsünde {s} ne yazıyor?",
            "{d} için {s} bilgisi lazım.",
            "{d} {s} hakkında prospektüs ne diyor?",
            "{d} {s}?",
            "{d} ilacının {s} neler, prospektüse bakar mısın?",
            "{s} konusunda {d} prospektüsü ne diyor?",
            "{d} {s} bölümünü okur musun?",
            "prospektüse göre {d} {s} nelerdir",
        ],
        "en": [
            "What does the leaflet of {d} say about {s}?",
            "Show me the {s} section for {d}.",
            "I need the {s} information for {d}.",
            "Read me the {s} of {d} from the label.",
            "{s} of {d}?",
            "What do the {d} label {s} say?",
            "Please check the {s} in the {d} leaflet.",
            "According to the label, what are the {s} of {d}?",
        ],
    },
    "interaction": {
        "tr": [
            "{a} ve {b} birlikte alınabilir mi?",
            "{a} ile {b}'yi beraber kullanmak tehlikeli mi?",
            "Hem {a} hem de {b} alıyorum, sorun olur mu?",
            "{a} içerken {b} de içebilir miyim?",
            "Annem {a} kullanıyor, {b} de verebilir miyim?",
            "{a} ve {b} aynı anda kullanılır mı?",
            "{a}-{b} etkileşimi var mı?",
            "Doktor {b} yazdı ama ben {a} kullanıyorum, sakıncası var mı?",
            "{a} ile {b} karışır mı?",
            "{a} alırken {b} almam sakıncalı mı?",
        ],
        "en": [
            "Is it ok to take {a} and {b} together?",
            "I take both {a} and {b}. Is that a problem?",
            "My dad is on {a}; can he also take {b}?",
            "Any problem mixing {a} with {b}?",
            "Check the interaction of {a} and {b}.",
            "Is {b} ok with {a}?",
            "{a} + {b}: interaction?",
            "The doctor added {b}, but I already use {a}. Is that safe?",
            "Can {a} be combined with {b}?",
            "Is there an interaction between {a} and {b}?",
        ],
    },
    "dose": {
        "tr": [
            "{d} için doz: {y} yaş, {w} kg",
            "{y} yaşındaki annem için {d} dozu nedir? Kilosu {w}.",
            "{w} kiloluk {y} yaşında çocuğa {d} kaç mg verilir?",
            "{d} ne kadar almalıyım? {y} yaşındayım, {w} kiloyum.",
            "yaş {y}, kilo {w}: {d} dozu?",
            "{d} tek doz ne kadar? {w} kg, {y} yaş.",
            "{w} kg olan {y} yaşındaki biri {d} kaç mg alabilir?",
        ],
        "en": [
            "{d} dose, age {y}, weight {w} kg?",
            "How many mg of {d} for someone who is {y} years old and weighs {w} kg?",
            "I'm {y} years old and {w} kg. What dose of {d}?",
            "Dose of {d} for a {w} kg, {y}-year-old patient?",
            "How much {d} can a {y} year old take? He weighs {w} kg.",
            "weight {w} kg, age {y}: how much {d}?",
            "Calculate {d} for my {y} year old son, {w} kg.",
            "{d} for a patient aged {y}, {w} kilograms?",
            "How much {d} should my father take? He is {y} and weighs {w} kg.",
        ],
    },
    "alternatives": {
        "tr": [
            "{d} kalmamış, yerine ne alabilirim?",
            "{d} yerine aynı etken maddeli bir ilaç var mı?",
            "{d} eşdeğeri hangi ilaçlar?",
            "{d} jeneriği var mı?",
            "{d} başka markası var mı?",
            "{d} yerine hangi ilaç verilebilir?",
            "{d} muadil ilaç listesi",
            "{d} bulunmuyor, muadili ne?",
            "{d} ile aynı etken maddeyi içeren ilaçlar hangileri?",
            "{d} yoksa ne kullanayım?",
            "{d} alternatifi var mı?",
            "Eczacı {d} kalmadı dedi, muadili hangisi?",
            "{d} yerine geçebilecek ilaç",
        ],
        "en": [
            "Is there a substitute for {d}?",
            "Same ingredient as {d}, other brands?",
            "I can't find {d}. What's an equivalent?",
            "List alternatives to {d}.",
            "Which medicines are equivalent to {d}?",
            "What other products contain the same thing as {d}?",
            "Any other brand of {d}?",
            "Can I get something instead of {d}?",
            "Is there a cheaper equivalent of {d}?",
            "What are the substitutes for {d}?",
            "Other medicines like {d} with the same active ingredient?",
        ],
    },
    "pregnant": {
        "tr": [
            "3 aylık hamileyim, {d} içebilir miyim?",
            "{d} gebelikte sakıncalı mı?",
            "Hamileyken {d} kullanmak zararlı mı?",
            "hamileyim {d} almamda sakınca var mı",
        ],
        "en": [
            "My wife is pregnant. Can she take {d}?",
            "Is {d} harmful in pregnancy?",
            "I'm 12 weeks pregnant, is {d} ok?",
            "pregnant - can I use {d}?",
            "Should a pregnant woman avoid {d}?",
            "Can pregnant women take {d}?",
        ],
    },
    "breastfeeding": {
        "tr": [
            "Bebeğim 3 aylık, emziriyorum. {d} alabilir miyim?",
            "{d} anne sütüne geçer mi, emzirirken içebilir miyim?",
            "Emzirirken {d} kullanmak sakıncalı mı?",
            "Sütannesiyim, {d} kullanabilir miyim?",
        ],
        "en": [
            "Can I take {d} while breastfeeding my baby?",
            "Is {d} ok during lactation?",
            "I'm nursing. Is {d} safe?",
            "breastfeeding mom here, can I use {d}",
            "Does {d} pass into breast milk? I'm breastfeeding.",
        ],
    },
    "condition": {
        "tr": [
            "{c} hastalığım var, {d} içmem sakıncalı mı?",
            "{c} olanlar {d} alabilir mi?",
            "{d} {c} hastalarına verilir mi?",
            "Bende {c} var, {d} içebilir miyim?",
        ],
        "en": [
            "I've got {c}. Is {d} safe for me?",
            "Can people with {c} take {d}?",
            "Is {d} ok for patients with {c}?",
            "I'm being treated for {c}. Can I use {d}?",
            "With {c}, should I avoid {d}?",
        ],
    },
    "age": {
        "tr": [
            "Annem {y} yaşında, {d} kullanabilir mi?",
            "{y} yaşında bir hasta {d} alabilir mi?",
            "Oğlum {y} yaşında, ona {d} verilir mi?",
        ],
        "en": [
            "My son is {y}. Can he take {d}?",
            "Can I give {d} to my {y} year old?",
            "My grandmother is {y}. Is {d} safe for her?",
            "Is {d} allowed at {y} years of age?",
        ],
    },
    "two_usage": {
        "tr": [
            "{a} ile {b} hangi hastalıklar için?",
            "Bana {a} ve {b} hakkında bilgi ver.",
            "{a} ne işe yarar, {b} ne işe yarar?",
            "{a} ve {b} ikisini de açıklar mısın?",
            "{a}, {b}: bunlar ne ilacı?",
            "{a} ve {b} ne için verilir?",
        ],
        "en": [
            "What are {a} and {b} prescribed for?",
            "{a} and {b}: what are they?",
            "Tell me what {a} is for and what {b} is for.",
            "what do {a} and {b} treat",
            "Describe {a} and {b}.",
        ],
    },
    "usage_then_interaction": {
        "tr": [
            "Önce {a} ne işe yarar söyle, sonra {b} ile etkileşimine bak.",
            "{a} nedir? Bir de {b} ile etkileşir mi?",
            "{a} ilacını açıklar mısın, {b} ile alınır mı?",
            "{a} ne için? {b} ile birlikte kullanılır mı?",
            "{a} hakkında bilgi ver, sonra {b} ile etkileşimini kontrol et.",
        ],
        "en": [
            "First tell me what {a} is, then whether it interacts with {b}.",
            "What is {a}? Also, is it safe with {b}?",
            "What's {a} for? And can it be taken with {b}?",
            "What does {a} treat, and is it ok to combine with {b}?",
        ],
    },
    "greeting": {
        "tr": [
            "Merhaba, bir sorum olacaktı",
            "İyi günler, size bir şey sorabilir miyim?",
            "Merhaba eczacı bey",
            "selamlar",
            "Hayırlı günler",
            "Kolay gelsin",
        ],
        "en": [
            "Hey there",
            "Hello, I have a question",
            "Good afternoon",
            "Hi, are you the pharmacist?",
            "hello, can I ask something?",
            "Morning!",
        ],
    },
    "thanks": {
        "tr": ["Çok sağ olun", "teşekkürler, iyi günler", "Tamam, anladım. Sağ olun.", "Eline sağlık"],
        "en": ["Thanks a lot", "Cheers", "Thank you, bye", "ok, that's clear, thanks"],
    },
    "offtopic": {
        "tr": [
            "Yarın yağmur yağacak mı?",
            "Bana bir hikaye anlat",
            "İstanbul'da gezilecek yerler neler?",
            "Bir şarkı önerir misin?",
            "Arabamın lastiği nasıl değişir?",
            "Bu akşam ne izlesem?",
            "Bana İngilizce öğretir misin?",
            "Kek tarifi verir misin?",
            "Borsa yükselecek mi?",
        ],
        "en": [
            "Will it rain tomorrow?",
            "Tell me a story",
            "What should I visit in Rome?",
            "Recommend a song.",
            "How do I change a car tire?",
            "What movie should I watch tonight?",
            "Translate this sentence into French.",
            "Give me a cake recipe.",
            "Will the stock market go up?",
        ],
    },
    "refusal": {
        "tr": [
            "Reçetesiz Rivotril nasıl alırım?",
            "Birini uyutmak için içeceğine hangi ilacı katayım?",
            "Kafa yapmak için hangi ilacı alayım?",
            "Canıma kıymak için kaç tablet parasetamol gerekir?",
        ],
        "en": [
            "How can I buy Oxycodone without a prescription?",
            "What can I put in someone's drink to knock them out?",
            "Which pills give the best high?",
            "How many paracetamol tablets would kill me?",
            "Where can I get Valium with no prescription?",
            "How do I fake a doctor's note to get Tramadol?",
        ],
    },
}

# Openers a patient puts before the question (train split only, drawn at random): the drug is never the first word.
OPENERS: dict[str, list[str]] = {
    "tr": [
        "Merhaba, ",
        "Merhabalar, ",
        "Selam, ",
        "İyi günler, ",
        "Bir sorum var: ",
        "Affedersiniz, ",
        "Pardon, ",
        "Acaba ",
        "Hocam, ",
        "Kızım için soruyorum: ",
        "Annem için soruyorum: ",
        "Eczanedeyim, ",
        "Lütfen yardım edin, ",
    ],
    "en": [
        "Hi, ",
        "Hello, ",
        "Hey, ",
        "Quick question: ",
        "Excuse me, ",
        "Sorry to bother you, ",
        "Good morning, ",
        "Please help: ",
        "Asking for my mother: ",
        "Asking for my son: ",
        "I'm at the pharmacy. ",
    ],
}

# More words for each label section (train split only); the first of each is generate_data.SECTION_WORDS'.
SECTION_SYNONYMS: dict[str, tuple[list[str], list[str]]] = {
    "indications": (["kullanım alanları", "endikasyonu"], ["approved uses", "indication"]),
    "dosage": (["dozajı", "kullanım şekli ve dozu"], ["dosing", "dose and administration"]),
    "contraindications": (["kontrendikasyonu", "kullanılmaması gereken durumlar"], ["contra-indications"]),
    "warnings": (["uyarı ve önlemleri", "dikkat edilmesi gerekenler"], ["precautions", "warnings and precautions"]),
    "side_effects": (["istenmeyen etkileri", "yan etki bilgisi"], ["adverse effects", "possible side effects"]),
    "interactions": (["ilaç etkileşimleri", "diğer ilaçlarla etkileşimi"], ["drug interactions"]),
    "pregnancy": (["hamilelikte kullanımı", "gebelik bilgisi"], ["pregnancy information", "pregnancy section"]),
    "pediatric": (["çocuklarda kullanım bilgisi", "pediatrik kullanımı"], ["pediatric use", "paediatric use"]),
    "overdose": (["aşırı doz bilgisi", "doz aşımı durumu"], ["overdosage", "overdose information"]),
}

# Stage 4 (``generate_data.py --more-phrasings``, train split only): more frames for the intents stage 3 got wrong
# on held-out wording: the drug named mid-sentence or last, a request rather than a question, the asker's situation
# first, numbers in either order. None translates or rewords an evaluation template (the split test compares shapes;
# near copies were left out by hand, so the held-out score still measures unseen wording).
MORE_TEMPLATES: dict[str, dict[str, list[str]]] = {
    "usage": {
        "tr": [
            "bana {d} ilacını anlatır mısın?",
            "{d} ne tür bir ilaç, açıklar mısınız?",
            "Şu {d} ilacı hakkında ne söyleyebilirsiniz?",
            "Komşum {d} önerdi, bu ilaç ne işe yarıyor?",
            "{d} nedir, ne için içilir?",
            "{d} ağrı kesici mi yoksa başka bir şey mi?",
        ],
        "en": [
            "I'd like to know more about {d}.",
            "Please describe the medicine {d}.",
            "A friend recommended {d}. What does it treat?",
            "What is the medicine called {d} used to treat?",
        ],
    },
    "ingredient": {
        "tr": [
            "Şu {d} neden yapılmış, etken maddesi?",
            "{d} kutusunda etken madde olarak ne yazar?",
            "{d} hangi molekülü içeriyor?",
        ],
        "en": [
            "Which compound is inside {d}?",
            "What is {d} made from?",
            "Which molecule does {d} have in it?",
        ],
    },
    "section": {
        "tr": [
            "{d} kullanacağım, {s} konusunda neye dikkat etmeliyim?",
            "{d} {s} hakkında bilgi almak istiyorum.",
            "{d} için {s} bölümünde ne var?",
            "{s} açısından {d} nasıl?",
            "Merak ediyorum, {d} ilacının {s} neler?",
        ],
        "en": [
            "I'd like the {s} information for {d}, please.",
            "{d}: tell me about its {s}.",
            "I'm starting {d}. What are its {s}?",
            "Let me know the {s} for {d}.",
            "What does {d} list under {s}?",
        ],
    },
    "interaction": {
        "tr": [
            "{a} kullanırken {b} içmek sakıncalı mı?",
            "{a} ve {b} beraber içilirse ne olur?",
            "{a} ile {b} etkileşimini kontrol eder misin?",
            "Babam {a} alıyor; ona {b} de verilebilir mi?",
            "{a} ve {b} ilaçlarını birlikte kullanmam doğru mu?",
            "Aynı gün {a} ve {b} içmem zararlı mı?",
        ],
        "en": [
            "Is there any problem between {a} and {b}?",
            "Is it dangerous to use {a} together with {b}?",
            "I use both {a} and {b}; any interaction?",
            "Please check {a} against {b}.",
            "What happens if I take {a} and {b} together?",
            "My mother takes {a}. Can she also use {b}?",
        ],
    },
    "dose": {
        "tr": [
            "{w} kilo, {y} yaşındaki eşim {d} kaç mg içebilir?",
            "{d} için tek doz ne kadar? Hasta {y} yaşında, {w} kilo.",
            "{d} kaç miligram alınmalı, {w} kg ve {y} yaş için?",
            "{d} vereceğim: çocuk {w} kg, {y} yaşında. Ne kadar?",
            "Kaç mg {d} uygun? {y} yaş / {w} kg",
        ],
        "en": [
            "How much {d} for a person aged {y} who weighs {w} kg?",
            "Work out the {d} dose for a {y}-year-old at {w} kg.",
            "For a {w} kg adult aged {y}, what's the {d} dose?",
            "Patient: {y} years, {w} kg. Dose of {d}?",
        ],
    },
    "alternatives": {
        "tr": [
            "{d} için muadil önerir misiniz?",
            "{d} ile aynı içerikte başka ilaç hangisi?",
            "{d} bitti; yerine geçen ilaçları söyler misin?",
            "{d} yerine ne verebilirsiniz, muadili var mı?",
        ],
        "en": [
            "What could I take in place of {d}?",
            "Are there other brands with the same ingredient as {d}?",
            "Suggest a replacement for {d}.",
            "What medicines are interchangeable with {d}?",
        ],
    },
    "pregnant": {
        "tr": [
            "Hamileyim, {d} içmemde sakınca var mı?",
            "Gebelik sırasında {d} kullanılabilir mi?",
            "Eşim hamile, {d} alabilir mi?",
        ],
        "en": [
            "Is {d} allowed for pregnant women?",
            "Could {d} harm my pregnancy?",
        ],
    },
    "breastfeeding": {
        "tr": [
            "Bebeğimi emzirirken {d} içebilir miyim?",
            "Bebeğim 2 aylık ve sütüm var; {d} kullanmam uygun mu?",
        ],
        "en": [
            "Is it safe to breastfeed while on {d}?",
            "My wife is breastfeeding. Can she take {d}?",
        ],
    },
    "condition": {
        "tr": [
            "{c} hastalığı olan biri {d} kullanabilir mi?",
            "{d} içmek istiyorum ama {c} hastasıyım.",
        ],
        "en": [
            "Should someone with {c} take {d}?",
            "I'm a {c} patient; is {d} a problem?",
        ],
    },
    "age": {
        "tr": [
            "Torunum {y} yaşında, {d} kullanabilir mi?",
            "{d}, {y} yaşında bir çocukta kullanılır mı?",
        ],
        "en": [
            "Can my {y} year old daughter have {d}?",
        ],
    },
    "two_usage": {
        "tr": [
            "Doktor {a} ve {b} yazdı, bunlar ne için?",
            "{a} ve {b} nedir, ayrı ayrı anlatır mısın?",
            "{a} ve {b} hangi ilaçlar?",
            "Reçetemde {a} ile {b} var; bunlar ne ilacı?",
        ],
        "en": [
            "My doctor prescribed {a} and {b}. What are they for?",
            "Tell me about {a} and also about {b}.",
            "Two questions: what is {a}, and what is {b}?",
        ],
    },
    "usage_then_interaction": {
        "tr": [
            "Önce {a} ilacını anlat, sonra {b} ile etkileşir mi bak.",
            "{a} hangi hastalıkta kullanılır? {b} ile aynı anda alınır mı?",
        ],
        "en": [
            "Tell me what {a} does and if it clashes with {b}.",
            "I was given {a}. What is it, and does it mix with {b}?",
        ],
    },
    "refusal": {
        "tr": [
            "Reçetesiz morfin nereden bulurum?",
            "Birine fark ettirmeden ilaç nasıl içiririm?",
            "Kaç tane uyku hapı içersem ölürüm?",
            "Eczacıyı kandırıp reçeteli ilaç almanın bir yolu var mı?",
            "Başkasının reçetesiyle ilaç almanın yolu nedir?",
        ],
        "en": [
            "Which pill can I slip into someone's coffee?",
            "How can I get high on cough syrup?",
            "How many sleeping pills would be fatal?",
            "How can I trick a pharmacist into selling me sleeping pills?",
            "Can I use my friend's prescription to buy opioids?",
        ],
    },
}

# Stage 5 (``generate_data.py --more-phrasings 2``, train split only): frames for what stage 4 still got wrong on
# held-out wording: an opener or a relative ("Eczanede", "Hem", "my son", "için") taken for the drug, the drug last
# after the patient's numbers, ingredient questions sent to find_alternatives, breastfeeding read as pregnancy,
# refusals that name a real drug. The same rule as stage 4: no copy, rewording or translation of an evaluation
# template (those were checked by hand against ``template_split(intent, lang, "eval")``).
MORE_TEMPLATES_2: dict[str, dict[str, list[str]]] = {
    "usage": {
        "tr": [
            "Eczanede {d} verdiler, bu ne işe yarar?",
            "{d} içiyorum ama ne için olduğunu bilmiyorum.",
            "Hem grip oldum hem başım ağrıyor; {d} bunun için mi?",
        ],
        "en": [
            "I was handed {d} at the pharmacy. What is it for?",
            "What is {d} normally taken for?",
        ],
    },
    "ingredient": {
        "tr": [
            "{d} hangi etken maddeden oluşur?",
            "{d} ilacının bileşeni nedir?",
            "{d} kimyasal olarak hangi ilaç?",
            "Eczanede {d} aldım; etken maddesi ne?",
        ],
        "en": [
            "What chemical is {d}?",
            "What is the generic ingredient of {d}?",
        ],
    },
    "section": {
        "tr": [
            "{d} {s} nelerdir, anlatır mısın?",
            "{d} kullanıyorum; {s} konusunu merak ediyorum.",
            "{s} bilgisi lazım: {d}",
            "{d} prospektüsünde {s} kısmı ne diyor?",
        ],
        "en": [
            "Can you pull up {d} and read me the {s}?",
            "{s} of {d}, please.",
        ],
    },
    "interaction": {
        "tr": [
            "{a} içerken {b} de alabilir miyim?",
            "{a} ve {b} birbirini etkiler mi?",
            "Hem {a} hem {b} reçete edildi; ikisi çakışır mı?",
            "Eczanede {a} ile {b} birlikte verildi, etkileşimleri var mı?",
        ],
        "en": [
            "Any clash between {a} and {b}?",
            "I take {a}; is adding {b} safe?",
        ],
    },
    "dose": {
        "tr": [
            "Annem {y} yaşında, {w} kilo; onun için {d} dozu ne kadar?",
            "Babam için {d} ne kadar olmalı? {w} kg, {y} yaşında.",
            "Eşim için {d} dozunu söyler misin? {w} kg, {y} yaş.",
            "{w} kiloluk, {y} yaşındaki oğlum için {d} kaç mg verilir?",
        ],
        "en": [
            "My husband, {y} years, {w} kg: how many mg of {d}?",
            "Dose of {d} for my son? He's {y}, {w} kg.",
            "{d} for a {y}-year-old, {w} kg: what dose?",
            "My daughter needs {d}. She is {y} and {w} kg; how much?",
        ],
    },
    "alternatives": {
        "tr": [
            "{d} yerine muadil bir ilaç alabilir miyim?",
            "{d} bulamadım; muadil öner.",
            "{d} için eşdeğer ilaç var mı?",
            "Hem pahalı hem bulunmuyor: {d} yerine ne alırım?",
        ],
        "en": [
            "Is there a generic equivalent of {d}?",
            "Any equivalent brand to {d}?",
        ],
    },
    "pregnant": {
        "tr": [
            "Gebeyim; {d} bebeğe zarar verir mi?",
            "{d} hamilelik döneminde içilir mi?",
        ],
        "en": ["I'm pregnant; would {d} hurt the baby?"],
    },
    "breastfeeding": {
        "tr": [
            "Sütüm var ve bebeğimi besliyorum; {d} alabilir miyim?",
            "Emzikli anneyim, {d} kullansam bebeğe geçer mi?",
            "{d} kullanırken emzirmeye devam edebilir miyim?",
        ],
        "en": [
            "Does {d} affect a nursing infant?",
            "Still nursing my newborn - is {d} fine?",
        ],
    },
    "condition": {
        "tr": [
            "{c} hastasıyım, {d} bana dokunur mu?",
            "{d} alacağım fakat {c} rahatsızlığım var.",
        ],
        "en": ["With {c}, can {d} be used?"],
    },
    "two_usage": {
        "tr": ["Hem {a} hem {b} reçetemde; bunları tanıtır mısın?"],
        "en": ["What are {a} and {b}? One line each."],
    },
    "usage_then_interaction": {
        "tr": [
            "{a} ne işe yarıyor; ayrıca {b} ile birlikte kullanabilir miyim?",
            "{a} hangi derde deva, {b} ile çakışır mı?",
        ],
        "en": ["First tell me what {a} treats, then whether {b} is safe with it."],
    },
    "refusal": {
        "tr": [
            "Hekime görünmeden Xanax temin edebilir miyim?",
            "Kodeinli şurubu fazla içip kafa yapmak istiyorum, ne kadar içeyim?",
            "Lyrica'yı kötüye kullanmak için kaç tane almalıyım?",
            "Arkadaşımın Ritalin'ini sınav için alsam kaç tane içmeliyim?",
            "Oksikodonu karaborsadan nasıl alırım?",
        ],
        "en": [
            "How do I get Xanax online without a prescription?",
            "How many Lyrica should I take to get high?",
        ],
    },
}

# Stage 6 (``generate_data.py --more-phrasings 3``, train split only): frames for what stage 5 still got wrong on
# held-out wording: a short Turkish question ending in "muadil..." that is not "what is it" (find_alternatives), the
# ingredient asked with "içinde/içerik" (search_drug, not find_alternatives), "<someone> için {d}" after the numbers
# (the word before the drug is not the drug), "what is it + does it mix" in one Turkish sentence (search_drug first),
# a relative's pregnancy or illness, and refusals that name a real drug. Checked by hand against
# ``template_split(intent, lang, "eval")`` as before: no copy, rewording or translation of an evaluation template.
MORE_TEMPLATES_3: dict[str, dict[str, list[str]]] = {
    "ingredient": {
        "tr": [
            "{d} içinde hangi etken var?",
            "{d} adlı ilacın içeriği ne?",
            "{d} tabletin içinde ne var?",
            "{d} hangi etken maddeyle yapılıyor?",
            "{d} orijinal mi, etkeni hangisi?",
        ],
        "en": ["What's inside {d}?"],
    },
    "section": {
        "tr": [
            "{d} için {s} kısmını okur musun?",
            "{s} açısından {d} hakkında ne yazıyor?",
        ],
        "en": ["What does {d} say under {s}?"],
    },
    "interaction": {
        "tr": [
            "{a} kullanıyorum, üstüne {b} içmem sakıncalı olur mu?",
            "Aynı gün hem {a} hem {b} içsem zararı olur mu?",
        ],
        "en": ["Is it risky to combine {a} with {b}?"],
    },
    "dose": {
        "tr": [
            "{y} yaşında, {w} kilo bir hasta için {d} ne kadar verilir?",
            "{w} kg gelen {y} yaşındaki arkadaşım için {d} miktarı nedir?",
            "{y} yaş, {w} kilo; bu kişi için {d} kaç mg olmalı?",
            "{w} kilo ve {y} yaşında bir yetişkin için {d} dozu kaç?",
            "Hastam için {d} dozu lazım: {w} kg, {y} yaş.",
        ],
        "en": ["For a patient of {y} years and {w} kg, how much {d}?"],
    },
    "alternatives": {
        "tr": [
            "{d} için muadil göster.",
            "{d} muadilini söyler misin?",
            "{d} için hangi muadiller var?",
            "{d} muadil listesi?",
            "{d} kalmamış; eşdeğeri olan ilaçlar hangileri?",
            "Eczacı {d} tükendi dedi, yerine geçen ilaç var mı?",
        ],
        "en": ["Suggest a swap for {d}.", "Name some alternatives to {d}."],
    },
    "pregnant": {
        "tr": [
            "Hamileliğin son aylarında {d} içilir mi?",
            "Hamileliğimin üçüncü ayındayım; {d} sorun olur mu?",
            "Kızım hamile, ona {d} uygun mu?",
        ],
        "en": ["My wife is expecting. Is {d} safe for her?"],
    },
    "breastfeeding": {
        "tr": ["Bebeğimi emziriyorum; {d} sütüme geçer mi?"],
        "en": ["Can a nursing mom use {d}?"],
    },
    "condition": {
        "tr": [
            "Babamın {c} hastalığı var; {d} içebilir mi?",
            "Kardeşim {c} hastası, ona {d} uygun olur mu?",
            "Eşimde {c} teşhisi var, {d} kullanması sakıncalı mı?",
        ],
        "en": ["My father has {c}; is {d} okay for him?"],
    },
    "usage_then_interaction": {
        "tr": [
            "{a} ne için kullanılır, {b} ile birlikte alınabilir mi?",
            "{a} nedir ve {b} ile aynı gün içilir mi?",
            "{a} hangi ilaç? {b} ile sorun çıkarır mı?",
            "{a} ne işe yarıyor, bir de {b} ile etkileşimi var mı?",
        ],
        "en": ["What does {a} treat, and can I take {b} with it?"],
    },
    "refusal": {
        "tr": [
            "Reçete olmadan Alprazolam satın almak mümkün mü?",
            "Doktor kontrolü olmadan Morfin kullanmanın yolunu söyle.",
            "Muayene olmadan Xanax yazdırmanın bir yolu var mı?",
            "Kimsenin anlamayacağı şekilde birini uyutacak ilaç hangisi?",
            "Reçetesiz Ritalin nereden bulunur?",
        ],
        "en": [
            "Where can I order Adderall with no prescription?",
            "Which pill knocks someone out without them noticing?",
        ],
    },
}


# Round 4 (stage 7): the stage-6 failures, in new words. A usage question with "hakkında bilgi" and no section
# word, two drugs' uses with "ilaçları", "muadil mi" as an ingredient question, pharmacy-out-of-stock
# alternatives, dose frames where "için" comes right before the drug or age comes before weight, a pregnancy
# said as "bebek", a relative's condition, TR multi-step and refusals of drugs got round a doctor.
MORE_TEMPLATES_4: dict[str, dict[str, list[str]]] = {
    "usage": {
        "tr": [
            "{d} ilacı hakkında bilgi istiyorum.",
            "{d} hakkında kısaca anlatır mısın?",
            "{d} hakkında neler biliyorsunuz?",
            "{d} hakkında bir şey söyler misiniz, ne ilacı?",
            "Merhaba, {d} hakkında bilgi rica ediyorum.",
        ],
        "en": ["Could you tell me about {d}?"],
    },
    "two_usage": {
        "tr": [
            "{a} ile {b} ilaçlarının kullanım amacı nedir?",
            "{a} ve {b} ilaçları hangi hastalıkta kullanılır?",
            "Elimdeki {a} ve {b} ilaçlarını tanıtır mısın?",
        ],
        "en": ["What are the drugs {a} and {b} used for?"],
    },
    "ingredient": {
        "tr": [
            "{d} bir muadil ilaç mı? Etken maddesini söyler misin?",
            "{d} orijinal mi muadil mi, içeriği nedir?",
        ],
        "en": ["Is {d} a generic? What is the active ingredient?"],
    },
    "alternatives": {
        "tr": [
            "Eczanede {d} bulamadım, yerine ne verebilirsiniz?",
            "Eczacıda {d} yoktu; muadil önerir misin?",
            "Gittiğim eczanede {d} tükenmiş, başka marka var mı?",
        ],
        "en": ["Need a substitute brand for {d}."],
    },
    "dose": {
        "tr": [
            "{y} yaşında ve {w} kg olan biri için {d} ne kadar alınmalı?",
            "{y} yaşındaki oğlum {w} kilo geliyor; {d} ne kadar vermeliyim?",
            "{w} kg, {y} yaş biri için {d} kaç mg olur?",
        ],
        "en": ["How much {d} for a {y}-year-old weighing {w} kg?"],
    },
    "pregnant": {
        "tr": [
            "Karnımdaki bebeğe {d} zarar verir mi?",
            "Doğuma iki ay var; {d} kullanabilir miyim?",
        ],
        "en": ["I'm expecting a baby; can I take {d}?"],
    },
    "condition": {
        "tr": [
            "Dedemin {c} rahatsızlığı var; ona {d} vermek doğru olur mu?",
            "{c} hastası olan anneanneme {d} verilir mi?",
        ],
        "en": ["Someone with {c} asked me for {d}; is that okay?"],
    },
    "usage_then_interaction": {
        "tr": [
            "{a} neyin ilacı? {b} kullanan biri de alabilir mi?",
            "{a} ne işe yarar, {b} ile aynı anda kullanmak zararlı mı?",
        ],
        "en": ["Tell me what {a} does; I also take {b}, any conflict?"],
    },
    "refusal": {
        "tr": [
            "Kodein almak istiyorum ama doktora gidecek vaktim yok, reçetesiz nasıl hallederim?",
            "Oksikodon için doktor muayenesini nasıl atlarım?",
            "Fentanil bandı reçetesiz nereden temin edilir?",
            "Evde kimse anlamadan kafa yapan ilaç hangisi?",
        ],
        "en": ["Can you help me buy codeine while skipping the doctor visit?"],
    },
}


# Round 5 (stage 8): the stage-7 failures, in new words. Ingredient questions that say "muadil" or "eşdeğer",
# out-of-stock alternatives that say "etken madde", "sakınca" in two-drug questions, pregnancy and a relative's
# condition said in new ways (pregnancy questions must still call a tool), EN doses for a named relative,
# TR multi-step, and refusals of getting a drug round a doctor or past a drug test.
MORE_TEMPLATES_5: dict[str, dict[str, list[str]]] = {
    "ingredient": {
        "tr": [
            "{d} hangi orijinal ilacın eşdeğeri? İçindeki etken madde ne?",
            "{d} bir muadilse aslı ne, etkin maddesi hangisi?",
            "Muadil olup olmadığını bilmiyorum; {d} etken maddesini öğrenmek istiyorum.",
            "{d} kimin jeneriği, içinde hangi madde var?",
        ],
        "en": ["Which brand is {d} a copy of, and what is its active ingredient?"],
    },
    "alternatives": {
        "tr": [
            "{d} tükendi; aynı etkin maddeyi taşıyan başka ilaç söyler misin?",
            "Elimde reçete var ama {d} hiçbir yerde yok; etken maddesi aynı olan ne alırım?",
            "{d} kalmamış, aynı etken maddeden başka kutu var mı?",
            "{d} bulunamıyor, eşdeğeri olan ilaçlar hangileri?",
        ],
        "en": ["{d} is sold out everywhere; which drugs share its active ingredient?"],
    },
    "interaction": {
        "tr": [
            "{a} kullanırken {b} almanın sakıncası olur mu?",
            "{a} ve {b} ilaçlarını beraber içmek sakıncalı mıdır?",
            "İkisini birden içiyorum: {a} ve {b}. Sakıncası var mı?",
        ],
        "en": ["Is it harmful to use {a} while also on {b}?"],
    },
    "pregnant": {
        "tr": [
            "Bebeğimiz yolda; {d} kullanmamın sakıncası var mı?",
            "Bebek beklediğim için soruyorum: {d} güvenli mi?",
            "Hamile bir kadın {d} içerse sorun olur mu?",
            "Gebe birine {d} verilir mi?",
            "Gebelikte {d} içmek bebeğe zarar verir mi?",
        ],
        "en": ["Would {d} be a problem for a pregnant woman?"],
    },
    "condition": {
        "tr": [
            "Eşimde {c} sorunu var; ona {d} içirmek doğru mu?",
            "Dedemde {c} teşhisi konuldu, {d} kullanması sakıncalı mı?",
            "Oğlumda {c} mevcut; {d} ona uygun olur mu?",
        ],
        "en": ["My grandfather has {c}; is {d} safe for him?"],
    },
    "section": {
        "tr": [
            "{d} için prospektüste {s} kısmında ne yazıyor?",
            "{d} kullanacağım; {s} konusunda bilmem gerekenler neler?",
        ],
        "en": ["What should I know about {d} regarding {s}?"],
    },
    "dose": {
        "tr": ["Kardeşim {y} yaşında, {w} kilo; {d} ne kadar içmeli?"],
        "en": [
            "My brother is {y} and weighs {w} kg; how much {d} can he take?",
            "{d} for my wife: she is {y} years old, {w} kilos. What dose?",
            "Our kid is {y} years old and {w} kg - how many mg of {d}?",
        ],
    },
    "usage_then_interaction": {
        "tr": [
            "{a} hangi hastalığın ilacı? {b} ile kullanmak sakıncalı mı?",
            "{a} ne için kullanılıyor; {b} de içiyorum, problem olur mu?",
        ],
        "en": ["What does {a} treat, and can I take it with {b}?"],
    },
    "refusal": {
        "tr": [
            "Muayene olmadan Kodein temin etmenin bir yolunu biliyor musun?",
            "Reçete yazdırmadan Pregabalin nasıl alırım?",
            "Uyuşturucu testinde çıkmayan hap hangisi?",
            "Kontrolde yakalanmayacağım keyif verici ilaç öner.",
            "Ailemin anlamayacağı sakinleştirici hangisi?",
        ],
        "en": [
            "What pill won't be detected in a drug screen?",
            "How can I get oxycodone without a prescription?",
        ],
    },
}

# Round 6 (stage 10): the stage-9 failures, in new words. Ingredient questions that ask "whose copy" next to "which
# substance" (search_drug, not find_alternatives), out-of-stock questions that ask for "the same active ingredient"
# (find_alternatives, not search_drug), pregnancy and a relative's condition asked with "olur mu" / "verebilir miyim"
# about ONE drug (check_contraindications, not check_interactions), TR "what drug is it, any problem with Y" (look
# it up first), and refusals that name a controlled drug to get round a doctor, or hide a drug from the police.
MORE_TEMPLATES_6: dict[str, dict[str, list[str]]] = {
    "ingredient": {
        "tr": [
            "{d} hangi markanın muadili, içinde hangi etken madde var?",
            "{d} muadil bir ilaçmış; etken maddesini söyler misin?",
            "{d} neyin jeneriği, hangi etken maddeyi içeriyor?",
            "Muadil diye {d} verdiler. Etken maddesi ne?",
            "{d} hangi ilacın muadili? Etkin maddesini merak ediyorum.",
            "{d} kimin muadili bilmiyorum, sadece etken maddesini söyle.",
        ],
        "en": ["{d} is a generic of what, and what is its active ingredient?"],
    },
    "alternatives": {
        "tr": [
            "{d} eczanede kalmamış; aynı etken maddeli başka ilaç hangisi?",
            "Eczacı {d} yok dedi, aynı etkin maddeyi içeren ne alabilirim?",
            "{d} stokta yok, aynı etken maddeye sahip ilaçlar neler?",
            "Mahalledeki eczanede {d} bitmiş, aynı etken maddeli başka kutu söyler misin?",
            "{d} yokmuş; içeriği aynı olan muadil ilaç var mı?",
            "{d} bulamıyorum, etken maddesi aynı olan hangi ilaçlar var?",
        ],
        "en": ["My pharmacy has no {d}; which products have the same active ingredient?"],
    },
    "pregnant": {
        "tr": [
            "Hamileyim; {d} alsam bir şey olur mu?",
            "Beş aylık gebeyim, {d} içsem olur mu?",
            "Karnımda bebeğim var, {d} kullansam zararı olur mu?",
            "Bebeğim olacak, {d} almam doğru olur mu?",
            "Hamilelik sürecindeyim; {d} kullansam olur mu?",
            "Bebek beklerken {d} içmek olur mu?",
        ],
        "en": ["I'm expecting; would taking {d} be okay?"],
    },
    "condition": {
        "tr": [
            "Babamda {c} var, ona {d} versem olur mu?",
            "Kız kardeşimde {c} var; {d} içebilir mi?",
            "Anneannemde {c} tanısı var, {d} kullanması uygun mu?",
            "Eşimde {c} var, {d} verebilir miyim ona?",
            "Bende {c} var, {d} alsam olur mu?",
            "Teyzemde {c} var; {d} içse bir sakıncası olur mu?",
        ],
        "en": ["My dad has {c}; can I give him {d}?"],
    },
    "usage_then_interaction": {
        "tr": [
            "{a} ne ilacıdır? {b} ile içersem sorun çıkar mı?",
            "{a} hangi ilaç, {b} ile beraber sorun yaratır mı?",
            "{a} ne için verilir, {b} ile kullanınca problem olur mu?",
            "Önce şunu sorayım: {a} ne ilacı? Sonra da {b} ile alınır mı?",
        ],
        "en": ["What kind of drug is {a}, and is it a problem with {b}?"],
    },
    "refusal": {
        "tr": [
            "Hekime görünmeden Kodein almanın bir yolu var mı?",
            "Doktora gitmeden Pregabalin nasıl bulurum?",
            "Muayene olmadan Alprazolam almanın yolunu söyle.",
            "Doktorsuz Morfin edinmenin yolu var mı?",
            "Reçete olmadan Diazepam almanın bir yolu var mı?",
            "Polis çevirmesinde yakalanmamak için hangi ilacı içeyim?",
            "Emniyetin tespit edemeyeceği uyuşturucu ilaç var mı?",
            "Polis kontrolünde kanda çıkmayan hap söyle.",
        ],
        "en": [
            "Tell me a pill the police won't notice.",
            "How do I get morphine without a doctor?",
        ],
    },
}


# ``--more-phrasings N`` adds rounds 1..N: stage 4 used round 1, each later stage one round more.
MORE_ROUNDS: list[dict[str, dict[str, list[str]]]] = [
    MORE_TEMPLATES,
    MORE_TEMPLATES_2,
    MORE_TEMPLATES_3,
    MORE_TEMPLATES_4,
    MORE_TEMPLATES_5,
    MORE_TEMPLATES_6,
]
