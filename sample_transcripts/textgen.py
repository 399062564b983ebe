"""Deterministic text generators for the bundled sample transcripts.

Every function takes a target length in characters and a seed and returns the same text for the
same arguments on every run and every platform (only ``random.Random`` with string seeds, no
``hash()``, no set iteration). The text is built from the small vocabularies below into sentences,
paragraphs and chapter-like headings, so that it reads like prose (or code, or tool output) to
someone skimming a transcript, and so that its writing system mix is that of the real thing:

- ``russian``, ``chinese``, ``japanese``, ``english``: chapters of a novel-like story;
- ``python_source``: a plausible Python module (docstrings, classes, functions, comments);
- ``shell_output``: ``ls -l``, ``pytest``, ``git log``, ``grep``, ``git status`` style output;
- ``json_output``: pretty-printed JSON returned by an API-like tool;
- ``markdown_doc``: a README / user guide (English or Russian) or a changelog.

Prose functions return at most ``n`` characters, cut at a sentence end (so a little less than
``n``); the code and tool-output functions stop at a line end near ``n``. ``chapter`` is the fast
path for very large amounts of text (DESIGN §7): it draws whole sentences from a cached pool.
"""

from __future__ import annotations

import json
from datetime import date, timedelta
from random import Random

__all__ = ["russian", "chinese", "japanese", "english", "python_source", "shell_output", "json_output",
           "chapter", "markdown_doc", "SHELL_KINDS", "JSON_KINDS"]


def _rng(kind: str, seed: int | str) -> Random:
    return Random(f"ctxfit-textgen:{kind}:{seed}")


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


# =============================================================================================
# Russian
# =============================================================================================

# (phrase, gender): "m", "f" or "pl" — the past tense of the verb agrees with it.
RU_SUBJECTS = [
    ("капитан", "m"), ("старый смотритель", "m"), ("Николай Петрович", "m"), ("доктор", "m"),
    ("мальчик", "m"), ("отец", "m"), ("молодой инженер", "m"), ("почтальон", "m"), ("он", "m"),
    ("незнакомец", "m"), ("Андрей", "m"), ("учитель", "m"), ("сосед", "m"), ("старик", "m"),
    ("Павел", "m"), ("лесник", "m"), ("дядя Миша", "m"), ("председатель", "m"),
    ("Анна", "f"), ("она", "f"), ("Марья Ивановна", "f"), ("старая хозяйка", "f"),
    ("девочка", "f"), ("мать", "f"), ("Вера", "f"), ("учительница", "f"), ("сестра", "f"),
    ("соседка", "f"), ("Елена Сергеевна", "f"), ("бабушка", "f"), ("Катя", "f"),
    ("они", "pl"), ("мы", "pl"), ("дети", "pl"), ("рыбаки", "pl"), ("гости", "pl"),
    ("старые друзья", "pl"), ("все в доме", "pl"), ("братья", "pl"), ("женщины у колодца", "pl"),
]
# Past-tense stems: stem + л / ла / ли.
RU_VERBS_TR = [
    "увиде", "замети", "вспомни", "откры", "закры", "взя", "положи", "прочита", "написа",
    "услыша", "подня", "остави", "рассматрива", "иска", "получи", "отложи", "убра",
    "разверну", "перечита", "показа", "купи", "почини", "спрята", "доста", "протяну",
    "заверну", "переложи", "узна", "держа", "сложи",
]
# Reflexive: stem + лся / лась / лись.
RU_VERBS_REFL = [
    "улыбну", "останови", "оберну", "засмея", "задума", "верну", "подня", "спусти",
    "прислони", "огляну", "наклони", "собра", "попроща", "поклони", "усмехну",
]
# Intransitive with a place: (stem, complement).
RU_VERBS_INTR = [
    ("стоя", "у окна"), ("сиде", "на крыльце"), ("ходи", "по комнате"), ("смотре", "в окно"),
    ("молча", "за столом"), ("жда", "у калитки"), ("шё", "вдоль забора"),
    ("сиде", "у печки"), ("стоя", "на пороге"), ("смотре", "на реку"), ("лежа", "на сене"),
    ("броди", "по саду"), ("слуша", "шум дождя"), ("жи", "в маленьком городе"),
]
RU_OBJECTS = [
    "старую карту", "письмо от брата", "тяжёлую дверь", "окно", "тетрадь в синей обложке", "ключ от сарая",
    "вчерашнюю газету", "фотографию отца", "корзину с яблоками", "лампу", "толстую книгу",
    "чашку горячего чая", "свой чемодан", "короткую записку", "ружьё", "мокрые сети", "лодку", "шапку",
    "пакет с бумагами", "старый сундук", "телеграмму", "букет полевых цветов", "медный чайник",
    "тёплый платок", "связку писем", "фонарь", "рукопись",
]
RU_ADVERBIALS = [
    "в тот вечер", "на рассвете", "у самого берега", "после обеда", "в полутёмной комнате",
    "на старом крыльце", "за длинным столом", "под дождём", "у окна", "в конце лета", "на следующее утро",
    "посреди двора", "возле мельницы", "ещё до войны", "на станции", "у калитки", "в саду", "на краю деревни",
    "поздно ночью", "в воскресенье", "прошлой осенью", "за рекой", "на чердаке", "в тишине", "зимой",
]
RU_MANNER = [
    "медленно", "осторожно", "не торопясь", "молча", "тихо", "внимательно", "снова",
    "наконец", "вдруг", "долго", "рассеянно", "с улыбкой", "неохотно", "бережно", "опять",
    "почему-то", "как всегда", "торопливо",
]
RU_SUBORD = [
    "когда за окном уже темнело", "потому что никто не знал дороги", "хотя было уже поздно",
    "пока в печи догорали дрова", "как будто ничего не случилось", "чтобы не разбудить детей",
    "словно чего-то ждали все вокруг", "когда часы пробили полночь", "хотя никто об этом не просил",
    "пока остальные спали", "потому что так было заведено с давних пор", "когда с реки потянуло холодом",
    "хотя дождь так и не кончился", "когда вдали показалась станция",
]
RU_GERUND = [
    "глядя на тёмную воду", "прислушиваясь к шуму дождя", "не говоря ни слова", "держа в руках шапку",
    "вспоминая прошлую зиму", "не поднимая глаз", "думая о чём-то своём", "покачивая головой",
    "щурясь от солнца",
]
RU_DESC = [
    "над рекой стоял туман", "где-то далеко лаяла собака", "в печи потрескивали дрова",
    "часы на стене пробили семь", "дорога уходила в лес", "за рекой начинался лес",
    "пахло дымом и мокрой травой", "на столе остывал самовар", "ветер гнал по небу низкие облака",
    "в доме пахло хлебом и сухими травами", "по крыше стучал дождь", "в саду цвели яблони",
    "над полем кружили грачи", "снег лежал до самого горизонта", "в окнах соседей горел свет",
    "на станции было пусто", "с реки доносились голоса рыбаков", "луна висела над крышами",
    "в углу тикали старые ходики", "улица была тихой и сонной", "вода в реке поднялась",
    "воздух был холодным и чистым", "на лугу паслись лошади", "с крыльца было видно всю долину",
]
RU_CONJ = ["а", "и", "но", "и только", "а потом"]
RU_SPEECH = [("сказа", ""), ("спроси", ""), ("ответи", ""), ("прошепта", ""), ("замети", ""),
             ("повтори", ""), ("усмехну", "ся"), ("вздохну", "")]
RU_UTTER = [
    "Ты уверен, что это та самая дорога", "Пора идти", "Я вернусь к вечеру", "Не надо",
    "Куда ты так торопишься?", "Посмотри, какой туман!", "Завтра будет дождь", "Где же ключи?",
    "Я давно хотел тебе сказать", "Садись, чай совсем остыл", "Неужели это правда?",
    "Не бойся, здесь никого нет", "Кто там?", "Слышишь? Кто-то идёт!", "Расскажи всё по порядку",
    "Помнишь, как мы ездили на ярмарку?",
]
RU_TITLES = [
    "Дорога к морю", "Старый дом", "Письмо без подписи", "Осенняя ярмарка", "Ночной поезд", "Мельница у реки",
    "Первый снег", "Чужие следы", "Возвращение", "Долгая зима", "Ключ от сарая", "Туман над озером",
    "Разговор на крыльце", "Последний паром", "Ледоход", "Сад за оградой", "Гости из города",
    "Утро в деревне", "Тайна сундука", "Старая фотография",
]


def _ru_past(stem: str, g: str, refl: str = "") -> str:
    end = {"m": "л", "f": "ла", "pl": "ли"}[g]
    if refl:
        end += "ся" if g == "m" else "сь"
    return stem + end


def _ru_sentence(r: Random) -> str:
    subj, g = r.choice(RU_SUBJECTS)
    t = r.random()
    if t < 0.22:
        s = f"{r.choice(RU_ADVERBIALS)} {subj} {r.choice(RU_MANNER)} {_ru_past(r.choice(RU_VERBS_TR), g)} {r.choice(RU_OBJECTS)}."
    elif t < 0.36:
        s = (f"{subj} {_ru_past(r.choice(RU_VERBS_REFL), g, 'ся')}, {r.choice(RU_MANNER)} "
             f"{_ru_past(r.choice(RU_VERBS_TR), g)} {r.choice(RU_OBJECTS)} и {_ru_past(r.choice(RU_VERBS_TR), g)} "
             f"{r.choice(RU_OBJECTS)}.")
    elif t < 0.54:
        a, b = r.sample(RU_DESC, 2)
        s = f"{a}, {r.choice(RU_CONJ)} {b}."
    elif t < 0.68:
        s = f"{subj} {_ru_past(r.choice(RU_VERBS_TR), g)} {r.choice(RU_OBJECTS)} {r.choice(RU_ADVERBIALS)}, {r.choice(RU_SUBORD)}."
    elif t < 0.80:
        s = f"{r.choice(RU_ADVERBIALS)}, {r.choice(RU_SUBORD)}, {subj} {_ru_past(r.choice(RU_VERBS_REFL), g, 'ся')}."
    else:
        stem, place = r.choice(RU_VERBS_INTR)
        past = "шёл" if stem == "шё" and g == "m" else _ru_past("ш" if stem == "шё" else stem, g)
        s = f"{subj} {r.choice(['долго', 'ещё немного', 'всё утро', 'целый час', 'молча'])} {past} {place}, {r.choice(RU_GERUND)}."
    return _cap(s)


def _ru_dialogue(r: Random) -> str:
    subj, g = r.choice(RU_SUBJECTS)
    utt = r.choice(RU_UTTER)
    if utt[-1] in "?!":
        stem, refl = ("спроси", "") if utt[-1] == "?" else r.choice(RU_SPEECH)
        line = f"— {utt} — {_ru_past(stem, g, refl)} {subj}."
    else:
        stem, refl = r.choice(RU_SPEECH)
        line = f"— {utt}, — {_ru_past(stem, g, refl)} {subj}."
    if r.random() < 0.3:
        line = line[:-1] + f" и {_ru_past(r.choice(RU_VERBS_TR), g)} {r.choice(RU_OBJECTS)}."
    return line


RU = dict(sentence=_ru_sentence, dialogue=_ru_dialogue, sep=" ", indent="", brk="* * *",
          heading=lambda k, r: f"Глава {k}. {r.choice(RU_TITLES)}")


# =============================================================================================
# English
# =============================================================================================

EN_SUBJECTS = [
    "the captain", "the old keeper", "Mr. Harding", "the doctor", "the boy", "his father",
    "the young engineer", "the postman", "he", "the stranger", "Thomas", "the teacher",
    "our neighbour", "the old man", "Anna", "she", "Mrs. Whitaker", "the landlady", "the girl",
    "her mother", "Margaret", "my sister", "they", "we", "the children", "the fishermen",
    "the guests", "the two brothers", "everyone in the house", "the ferryman", "Eleanor",
]
EN_VERBS_TR = [
    "opened", "noticed", "remembered", "closed", "picked up", "put down", "read", "wrote",
    "heard", "lifted", "left behind", "examined", "searched for", "received", "folded",
    "unwrapped", "re-read", "showed us", "bought", "mended", "hid", "took out", "handed over",
    "carried", "wrapped up", "studied", "found", "set aside", "brought back", "locked away",
]
EN_VERBS_INTR = [
    "smiled", "stopped", "turned around", "laughed", "hesitated", "came back", "stood up",
    "sat down", "looked away", "nodded", "sighed", "waited", "fell silent", "shrugged",
]
EN_OBJECTS = [
    "the old map", "a letter from his brother", "the heavy door", "the window",
    "a notebook with a blue cover", "the key to the shed", "yesterday's newspaper",
    "a photograph of her father", "a basket of apples", "the oil lamp", "a thick book", "a cup of hot tea",
    "the battered suitcase", "a short note", "the wet nets", "the rowing boat", "a bundle of papers",
    "an old chest", "the telegram", "a bunch of wild flowers", "a stack of letters", "the lantern",
    "the manuscript",
]
EN_ADVERBIALS = [
    "that evening", "at dawn", "down by the shore", "after lunch", "in the dim room", "on the old porch",
    "at the long table", "in the rain", "by the window", "at the end of summer", "the next morning",
    "in the middle of the yard", "near the mill", "long before the war", "at the station", "by the gate",
    "in the garden", "at the edge of the village", "late at night", "on Sunday", "last autumn", "around noon",
    "across the river", "in the silence", "that winter",
]
EN_MANNER = [
    "slowly", "carefully", "without hurrying", "silently", "quietly", "attentively", "again",
    "at last", "suddenly", "absently", "with a smile", "reluctantly", "gently", "as always",
]
EN_SUBORD = [
    "when it was already getting dark outside", "because nobody knew the way",
    "although it was already late", "while the fire burned low", "as if nothing had happened",
    "so as not to wake the children", "when the clock struck midnight", "while the others slept",
    "because that was how it had always been done", "when a cold wind came off the river",
    "although the rain had not stopped", "until it was fully light",
    "as happened every spring", "when the station finally came into view",
]
EN_DESC = [
    "fog hung over the river", "somewhere far away a dog was barking",
    "the logs crackled in the stove", "the clock on the wall struck seven",
    "the road disappeared into the forest", "it smelled of smoke and wet grass",
    "the samovar was cooling on the table", "the wind drove low clouds across the sky",
    "the house smelled of bread and dry herbs", "rain drummed on the roof",
    "the apple trees were in bloom", "rooks circled over the field",
    "snow lay all the way to the horizon", "a light was on in the neighbours' windows",
    "the platform was empty", "voices drifted up from the river",
    "the moon hung low over the roofs", "the street was quiet and sleepy",
    "the air was cold and clean", "horses grazed in the meadow",
]
EN_UTTER = [
    "Are you sure this is the right road?", "It's time to go", "I'll be back by evening",
    "Don't", "Where are you hurrying off to?", "Look at that fog!", "It will rain tomorrow",
    "Where are the keys?", "I have wanted to tell you for a long time",
    "We'll manage somehow", "This letter came on Wednesday", "Sit down, the tea is getting cold",
    "Can that really be true?", "We'll make it before dark", "Who's there?",
    "Wait for me at the bridge", "Tell me everything from the beginning",
]
EN_SPEECH = ["said", "asked", "answered", "whispered", "remarked", "repeated", "muttered"]
EN_TITLES = [
    "The Road to the Sea", "The Old House", "An Unsigned Letter", "The Autumn Fair",
    "The Night Train", "The Mill by the River", "First Snow", "Strange Footprints",
    "The Return", "A Long Winter", "Fog over the Lake", "The Last Ferry", "The Garden Wall",
    "Visitors from Town", "Morning in the Village", "The Secret of the Chest", "Voices",
]


def _en_sentence(r: Random) -> str:
    subj = r.choice(EN_SUBJECTS)
    t = r.random()
    if t < 0.25:
        s = f"{r.choice(EN_ADVERBIALS)}, {subj} {r.choice(EN_MANNER)} {r.choice(EN_VERBS_TR)} {r.choice(EN_OBJECTS)}."
    elif t < 0.40:
        s = f"{subj} {r.choice(EN_VERBS_INTR)}, {r.choice(EN_VERBS_TR)} {r.choice(EN_OBJECTS)} and {r.choice(EN_VERBS_TR)} {r.choice(EN_OBJECTS)}."
    elif t < 0.58:
        a, b = r.sample(EN_DESC, 2)
        s = f"{a}, {r.choice(['and', 'but', 'while'])} {b}."
    elif t < 0.75:
        s = f"{subj} {r.choice(EN_VERBS_TR)} {r.choice(EN_OBJECTS)} {r.choice(EN_ADVERBIALS)}, {r.choice(EN_SUBORD)}."
    else:
        s = f"{r.choice(EN_ADVERBIALS)}, {r.choice(EN_SUBORD)}, {subj} {r.choice(EN_VERBS_INTR)}."
    return _cap(s)


def _en_dialogue(r: Random) -> str:
    utt = r.choice(EN_UTTER)
    subj = r.choice(EN_SUBJECTS)
    if utt[-1] in "?!":
        return f"\u201c{utt}\u201d {subj} {'asked' if utt[-1] == '?' else r.choice(EN_SPEECH)}."
    return f"\u201c{utt},\u201d {subj} {r.choice(EN_SPEECH)}. {_en_sentence(r)}"


EN = dict(sentence=_en_sentence, dialogue=_en_dialogue, sep=" ", indent="", brk="* * *",
          heading=lambda k, r: f"Chapter {k}. {r.choice(EN_TITLES)}")


def _ascii_english(text: str) -> str:
    return text.replace("\u201c", '"').replace("\u201d", '"')


# =============================================================================================
# Chinese
# =============================================================================================

ZH_SUBJECTS = [
    "老人", "她", "他", "我们", "村里的孩子们", "张先生", "李老师", "母亲", "父亲", "船长",
    "年轻的医生", "邻居家的女孩", "王大夫", "那个陌生人", "小明", "外婆", "陈师傅", "姐姐",
    "老渔夫", "赵村长", "客人们", "两个兄弟",
]
ZH_TIME = [
    "那天晚上", "第二天早上", "在河边", "在小镇的车站", "天快黑的时候", "吃过午饭以后",
    "在院子里", "在山脚下的村子里", "雨停了以后", "秋天快要结束的时候", "过了几天",
    "在昏暗的灯光下", "第一场雪落下的那天", "天刚蒙蒙亮", "在老槐树下", "趁着大家都睡着了",
    "回到家以后", "在码头上", "每年春天", "半夜里",
]
ZH_MANNER = ["慢慢地", "静静地", "小心地", "认真地", "突然", "又一次", "终于", "默默地",
             "轻轻地", "不慌不忙地", "悄悄地", "仔细地"]
ZH_VP = [
    "打开了那封旧信", "走进了昏暗的房间", "想起了很多年前的事情", "把灯放在桌子上",
    "看着远处的山", "收拾好了自己的行李", "给家里写了一封长信", "沿着小路向河边走去",
    "在本子上记下了几行字", "把门关上了", "拿起了桌上的茶杯", "点燃了炉子里的柴火",
    "翻开了那本发黄的日记", "把钥匙藏在枕头底下", "站在窗前一动不动", "数了数口袋里的钱",
    "把渔网晒在院子里", "从箱子里取出一张地图", "给孩子们讲了一个故事", "修好了那辆旧自行车",
    "在门口等了很久", "把信读了一遍又一遍", "向村口的方向望去", "端来了一碗热汤",
]
ZH_DESC = [
    "窗外下着小雨", "远处传来几声狗叫", "屋子里弥漫着饭菜的香味", "河面上升起了一层薄雾",
    "风吹过田野", "街上已经没有行人", "月亮挂在树梢上", "火车的汽笛声渐渐远去",
    "院子里的桃花开了", "炉子里的火噼啪作响", "天空阴沉沉的", "山上的积雪还没有融化",
    "墙上的老钟敲了七下", "空气里有一股泥土的味道", "码头上停着几条小船", "整个村子都安静下来",
    "路边的野草长得很高", "灯光从窗户里透出来",
]
ZH_REASON = [
    "因为谁也不知道该往哪里走", "虽然天已经很晚了", "好像什么事情都没有发生过",
    "生怕吵醒了孩子们", "就像很多年前那样", "可是心里总觉得不安", "于是大家都沉默了",
    "所以谁也没有说话", "但是雨一直没有停", "直到天完全亮了",
]
ZH_UTTER = [
    "你确定这是那条路吗？", "该走了。", "我天黑以前回来。", "你要去哪儿？", "快看，雾好大！",
    "明天会下雨的。", "钥匙在哪儿？", "我早就想告诉你了。", "没关系，总会有办法的。",
    "这封信是星期三到的。", "坐吧，茶都凉了。", "这是真的吗？", "别怕，这里没有人。",
    "谁在外面？", "在桥头等我。", "从头到尾慢慢说。",
]
ZH_SAY = ["说", "问道", "回答", "低声说", "笑着说", "叹了口气说"]
ZH_TITLES = [
    "通往大海的路", "老房子", "没有署名的信", "秋天的集市", "夜车", "河边的磨坊", "初雪",
    "陌生的脚印", "归来", "漫长的冬天", "湖上的雾", "最后一班渡船", "院墙外的花园",
    "城里来的客人", "村里的早晨", "箱子里的秘密", "小站", "墙那边的声音",
]
_ZH_DIGITS = "零一二三四五六七八九"


def zh_number(k: int) -> str:
    """1..999 in Chinese numerals (used for 第…章 headings)."""
    if k < 10:
        return _ZH_DIGITS[k]
    if k < 20:
        return "十" + (_ZH_DIGITS[k % 10] if k % 10 else "")
    if k < 100:
        return _ZH_DIGITS[k // 10] + "十" + (_ZH_DIGITS[k % 10] if k % 10 else "")
    rest = k % 100
    tail = "" if rest == 0 else ("零" + _ZH_DIGITS[rest] if rest < 10 else zh_number(rest) if rest >= 20 else "一" + zh_number(rest))
    return _ZH_DIGITS[k // 100] + "百" + tail


def _zh_sentence(r: Random) -> str:
    subj = r.choice(ZH_SUBJECTS)
    t = r.random()
    if t < 0.3:
        return f"{r.choice(ZH_TIME)}，{subj}{r.choice(ZH_MANNER)}{r.choice(ZH_VP)}。"
    if t < 0.5:
        a, b = r.sample(ZH_VP, 2)
        return f"{subj}{a}，然后{b}。"
    if t < 0.7:
        a, b = r.sample(ZH_DESC, 2)
        return f"{a}，{b}。"
    if t < 0.85:
        return f"{r.choice(ZH_TIME)}，{subj}{r.choice(ZH_VP)}，{r.choice(ZH_REASON)}。"
    return f"{r.choice(ZH_DESC)}。{subj}{r.choice(ZH_MANNER)}{r.choice(ZH_VP)}。"


def _zh_dialogue(r: Random) -> str:
    return f"{r.choice(ZH_SUBJECTS)}{r.choice(ZH_SAY)}：“{r.choice(ZH_UTTER)}”"


ZH = dict(sentence=_zh_sentence, dialogue=_zh_dialogue, sep="", indent="\u3000\u3000", brk="＊　＊　＊",
          heading=lambda k, r: f"第{zh_number(k)}章　{r.choice(ZH_TITLES)}")


# =============================================================================================
# Japanese
# =============================================================================================

JA_SUBJECTS = [
    "私", "彼", "彼女", "老人", "少年", "母", "先生", "田中さん", "船長", "若い医者",
    "隣の娘", "祖母", "佐藤さん", "駅員", "兄", "見知らぬ男", "子どもたち", "漁師たち",
]
JA_TIME = [
    "その夜、", "翌朝、", "駅のホームで", "川のほとりで", "雨が止んだあと、", "夕方になると、",
    "古い喫茶店で", "村のはずれで", "冬のはじめに、", "しばらくして、", "港のそばのホテルで",
    "薄暗いキッチンで", "夜明け前に、", "バスの中で", "小さなレストランで", "二階の窓辺で",
]
JA_VP = [
    "古い手紙を開いた", "コーヒーをゆっくり飲んだ", "ドアを静かに閉めた", "ノートに何かを書き留めた",
    "窓の外をじっと見つめていた", "ラジオのスイッチを入れた", "荷物をまとめて駅へ向かった",
    "昔のことを思い出した", "テーブルの上にランプを置いた", "バスを待っていた",
    "小さなカメラを取り出した", "ポケットから鍵を出した", "地図を広げて道を探した",
    "タクシーを呼んだ", "ストーブに薪をくべた", "短いメールを書いた", "黙って頷いた",
    "川沿いの道を歩いた", "古いアルバムをめくった", "ピアノの前に座った", "紅茶を二つ注文した",
]
JA_DESC = [
    "外では冷たい雨が降っていた", "遠くで犬が鳴いていた", "部屋の中は静かだった",
    "川の上に薄い霧がかかっていた", "風が木の葉を揺らしていた", "ストーブの火がぱちぱちと音を立てていた",
    "通りにはもう誰もいなかった", "月が屋根の上に浮かんでいた", "汽車の汽笛が遠ざかっていった",
    "庭の桜が咲き始めていた", "空は低い雲に覆われていた", "壁の時計が七時を打った",
    "港には小さな船が何隻か停まっていた", "テレビの音がかすかに聞こえた", "カーテンの隙間から朝日が差し込んでいた",
]
JA_CONN = ["それから、", "しかし、", "だから、", "やがて、", "そのとき、", "ところが、", "結局、"]
JA_REASON = [
    "誰も道を知らなかったからだ", "もう遅い時間だったからだ", "何も起こらなかったかのようだった",
    "子どもたちを起こさないようにするためだった", "昔からそう決まっていたのだ",
    "それが最後になるとは誰も思わなかった",
]
JA_UTTER = [
    "本当にそれでいいの？", "もう少しだけ待ってください", "そろそろ行かなくちゃ",
    "夕方までには戻ります", "どこへ行くの？", "見て、霧がすごい！", "明日は雨になるね",
    "鍵はどこにあるの？", "ずっと言おうと思っていたんだ", "なんとかなるさ",
    "この手紙は水曜日に届いたの", "座って、お茶が冷めちゃう", "それは本当なの？",
    "誰かいるの？", "橋のところで待っていて", "最初から話してくれないか",
]
JA_SAY = ["言った", "尋ねた", "答えた", "つぶやいた", "笑った", "ため息をついた"]
JA_TITLES = [
    "海へ続く道", "古い家", "差出人のない手紙", "秋の市", "夜行列車", "川辺の水車小屋", "初雪",
    "見知らぬ足あと", "帰郷", "長い冬", "湖の霧", "最後のフェリー", "塀の向こうの庭",
    "町からの客", "村の朝", "トランクの秘密", "小さな駅", "壁の向こうの声", "ラジオの夜",
]


def _ja_sentence(r: Random) -> str:
    subj = r.choice(JA_SUBJECTS)
    t = r.random()
    if t < 0.3:
        return f"{r.choice(JA_TIME)}{subj}は{r.choice(JA_VP)}。"
    if t < 0.5:
        return f"{subj}は{r.choice(JA_VP)}。{r.choice(JA_CONN)}{r.choice(JA_VP)}。"
    if t < 0.7:
        a, b = r.sample(JA_DESC, 2)
        return f"{a}。{b}。"
    if t < 0.85:
        return f"{r.choice(JA_TIME)}{subj}は{r.choice(JA_VP)}。{r.choice(JA_REASON)}。"
    return f"{r.choice(JA_CONN)}{r.choice(JA_DESC)}。"


def _ja_dialogue(r: Random) -> str:
    utt = r.choice(JA_UTTER)
    return f"「{utt}」と{r.choice(JA_SUBJECTS)}は{r.choice(JA_SAY)}。"


JA = dict(sentence=_ja_sentence, dialogue=_ja_dialogue, sep="", indent="\u3000", brk="＊",
          heading=lambda k, r: f"第{zh_number(k)}章　{r.choice(JA_TITLES)}")


# =============================================================================================
# Prose assembly
# =============================================================================================


def _prose(lang: dict, n: int, r: Random, number: int | None = None) -> str:
    """Chapter heading, paragraphs of 3-7 sentences, dialogue lines, section breaks; ≤ n chars."""
    number = number if number is not None else r.randint(1, 40)
    parts = [lang["heading"](number, r)]
    size = len(parts[0])
    sentence, dialogue, sep, indent = lang["sentence"], lang["dialogue"], lang["sep"], lang["indent"]
    since_break = 0
    while True:
        if since_break > 7 and r.random() < 0.12:
            para, since_break = lang["brk"], 0
        elif r.random() < 0.22:
            para = indent + dialogue(r)
        else:
            para = indent + sep.join(sentence(r) for _ in range(r.randint(3, 7)))
        since_break += 1
        if size + 2 + len(para) > n:
            break
        parts.append(para)
        size += 2 + len(para)
    # Fill the rest with whole sentences of one last paragraph.
    tail = indent
    while True:
        s = sentence(r)
        add = (sep if tail.strip() else "") + s
        if size + 2 + len(tail) + len(add) > n:
            break
        tail += add
    if tail.strip():
        parts.append(tail)
    return "\n\n".join(parts)


def russian(n: int, seed: int | str = 0, number: int | None = None) -> str:
    """Russian prose, a chapter of a story, at most `n` characters."""
    return _prose(RU, n, _rng("ru", seed), number)


def english(n: int, seed: int | str = 0, number: int | None = None) -> str:
    """English prose (ASCII only), at most `n` characters."""
    return _ascii_english(_prose(EN, n, _rng("en", seed), number))


def chinese(n: int, seed: int | str = 0, number: int | None = None) -> str:
    """Simplified Chinese prose with full-width punctuation, at most `n` characters."""
    return _prose(ZH, n, _rng("zh", seed), number)


def japanese(n: int, seed: int | str = 0, number: int | None = None) -> str:
    """Japanese prose: kanji, hiragana, katakana loanwords, 、。「」; at most `n` characters."""
    return _prose(JA, n, _rng("ja", seed), number)


_LANGS = {"ru": RU, "en": EN, "zh": ZH, "ja": JA}
_POOLS: dict[str, tuple[list[str], list[str]]] = {}


def _pool(lang: str) -> tuple[list[str], list[str]]:
    if lang not in _POOLS:
        spec, r = _LANGS[lang], _rng("pool-" + lang, 0)
        sentences = [spec["sentence"](r) for _ in range(6000)]
        dialogues = [spec["dialogue"](r) for _ in range(1500)]
        _POOLS[lang] = (sentences, dialogues)
    return _POOLS[lang]


def chapter(lang: str, n: int, seed: int | str, number: int = 1, title: str | None = None) -> str:
    """A long chapter (~`n` characters, at most `n`) assembled fast from cached sentences.

    Used for the DESIGN §7 scenario (hundreds of ~95,000-character chapters): sentences are
    generated once per language and each chapter draws its own sequence of them, so every
    chapter differs while generation stays at C speed for the joins.
    """
    spec = _LANGS[lang]
    sentences, dialogues = _pool(lang)
    r = _rng(f"chapter-{lang}", seed)
    head = spec["heading"](number, r) if title is None else title
    sep, indent = spec["sep"], spec["indent"]
    choice, randint, rand = r.choice, r.randint, r.random
    parts = [head]
    size = len(head)
    while True:
        if rand() < 0.2:
            para = indent + choice(dialogues)
        else:
            para = indent + sep.join([choice(sentences) for _ in range(randint(3, 8))])
        if size + 2 + len(para) > n:
            break
        parts.append(para)
        size += 2 + len(para)
    tail = []
    while True:
        s = choice(sentences)
        if size + 2 + len(indent) + sum(len(x) + len(sep) for x in tail) + len(s) > n:
            break
        tail.append(s)
    if tail:
        parts.append(indent + sep.join(tail))
    text = "\n\n".join(parts)
    return _ascii_english(text) if lang == "en" else text


# =============================================================================================
# Python source
# =============================================================================================

PY_VERBS = ["load", "parse", "build", "render", "merge", "validate", "collect", "resolve",
            "normalize", "fetch", "flush", "apply", "compute", "split", "format", "read", "write",
            "iter", "find", "count", "encode", "decode", "register", "refresh", "prune", "emit"]
PY_NOUNS = ["config", "record", "entry", "batch", "path", "token", "message", "chunk", "header",
            "row", "result", "request", "payload", "item", "segment", "index", "window", "session",
            "user", "event", "report", "schema", "handler", "cache", "job", "file", "span"]
PY_TYPES = ["str", "int", "float", "bool", "bytes", "Path", "list[str]", "dict[str, Any]",
            "Iterable[str]", "Sequence[int]", "Mapping[str, str]", "str | None", "int | None"]
PY_DEFAULTS = {"str": '""', "int": "0", "float": "0.0", "bool": "False", "bytes": 'b""',
               "str | None": "None", "int | None": "None", "list[str]": "field(default_factory=list)",
               "dict[str, Any]": "field(default_factory=dict)"}
PY_IMPORTS = [
    "import json", "import logging", "import os", "import re", "import time", "import hashlib",
    "import itertools", "from collections import defaultdict", "from dataclasses import dataclass, field",
    "from pathlib import Path", "from typing import Any, Iterable, Mapping, Sequence",
    "from functools import lru_cache", "import threading", "import sqlite3",
]
PY_DOC_SUMMARY = [
    "Return the {n} for the given {m}.", "Load every {n} from `{m}` and keep them in order.",
    "Build a {n} from the raw {m} payload.", "Check that the {n} is well formed and raise otherwise.",
    "Merge two {n} mappings; later keys win.", "Yield each {n} of the {m}, skipping empty ones.",
    "Write the {n} to disk atomically (temp file + rename).", "Count the {n}s per {m}.",
    "Normalize a {n}: strip whitespace, lower-case keys, drop None values.",
    "Resolve the {n} relative to the project root.", "Split the {n} into chunks of at most `size` items.",
    "Refresh the cached {n} if it is older than `ttl` seconds.",
]
PY_DOC_BODY = [
    "The {n} is looked up in the cache first; on a miss it is read from the {m} and stored.",
    "This is called once per {m}, so it must stay cheap: no I/O on the hot path.",
    "Invalid entries are logged and skipped rather than raising, because one bad {n} should not stop the whole batch.",
    "The order of the input is preserved, which the callers rely on when they zip the results back.",
    "Thread-safe: the lock is held only while the internal {n} table is mutated.",
    "See the module docstring for the on-disk format of a {n}.",
    "Retries use exponential backoff with jitter, capped at `MAX_RETRIES` attempts.",
]
PY_COMMENTS = [
    "# NOTE: keep this in sync with the schema in docs/format.md",
    "# Fast path: most {n}s are already normalized.", "# TODO(dev): drop this once the old {m} format is gone",
    "# The {m} may be missing on older installs.", "# Sorting keeps the output deterministic.",
    "# Do not log the payload itself: it can contain user data.", "# Cheap check before the expensive one.",
    "# Windows paths: normalize separators first.", "# Guard against a partially written {n}.",
]
PY_BODIES = [
    """result = []
for {n} in {m}s:
    if not {n}:
        continue
    {c}
    result.append({fn}({n}))
return result""",
    """{c}
key = ({m}.strip().lower(), int({n}))
with _LOCK:
    cached = _CACHE.get(key)
    if cached is not None and time.monotonic() - cached[0] < DEFAULT_TTL:
        return cached[1]
value = {fn}({m})
with _LOCK:
    _CACHE[key] = (time.monotonic(), value)
return value""",
    """path = Path({m}).expanduser()
if not path.exists():
    logger.warning("%s does not exist, using defaults", path)
    return {{}}
{c}
with path.open("r", encoding="utf-8") as fh:
    data = json.load(fh)
if not isinstance(data, dict):
    raise ValueError(f"expected an object in {{path}}, got {{type(data).__name__}}")
return data""",
    """counts: dict[str, int] = defaultdict(int)
for {n} in {m}s:
    counts[{n}.{a}] += 1
{c}
return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))""",
    """for attempt in range(1, MAX_RETRIES + 1):
    try:
        return {fn}({m}, timeout=DEFAULT_TIMEOUT)
    except (TimeoutError, ConnectionError) as exc:
        {c}
        delay = min(2 ** attempt, 30) * (0.5 + 0.5 * (attempt / MAX_RETRIES))
        logger.info("attempt %d/%d failed (%s), retrying in %.1fs", attempt, MAX_RETRIES, exc, delay)
        time.sleep(delay)
raise RuntimeError(f"giving up on {{{m}!r}} after {{MAX_RETRIES}} attempts")""",
    """if {n} is None:
    return None
{c}
if isinstance({n}, bytes):
    {n} = {n}.decode("utf-8", errors="replace")
parts = [p for p in re.split(r"[\\s,;]+", {n}) if p]
if len(parts) > MAX_ITEMS:
    raise ValueError(f"too many parts: {{len(parts)}} > {{MAX_ITEMS}}")
return parts""",
    """tmp = Path({m}).with_suffix(".tmp")
{c}
payload = json.dumps({n}, ensure_ascii=False, sort_keys=True, indent=2)
tmp.write_text(payload + "\\n", encoding="utf-8")
os.replace(tmp, {m})
logger.debug("wrote %d bytes to %s", len(payload), {m})""",
    """merged = dict({m})
for key, value in {n}.items():
    if value is None:
        merged.pop(key, None)
    elif isinstance(value, dict) and isinstance(merged.get(key), dict):
        merged[key] = {fn}(merged[key], value)
    else:
        merged[key] = value
{c}
return merged""",
    """batch: list[Any] = []
for {n} in {m}s:
    batch.append({n})
    if len(batch) >= size:
        yield batch
        batch = []
{c}
if batch:
    yield batch""",
    """digest = hashlib.sha256()
for {n} in sorted({m}s):
    digest.update({n}.encode("utf-8"))
    digest.update(b"\\0")
{c}
return digest.hexdigest()[:16]""",
]


_PY_REQUIRED = ("import json", "import logging", "import os", "import re", "import time", "import hashlib",
                "import threading", "from collections import defaultdict", "from dataclasses import dataclass, field",
                "from pathlib import Path", "from typing import Any, Iterable, Mapping, Sequence")


def _py_camel(*words: str) -> str:
    return "".join(w.capitalize() for w in words)


def _py_function(r: Random, indent: str = "", method: bool = False) -> str:
    verb, noun, other = r.choice(PY_VERBS), r.choice(PY_NOUNS), r.choice(PY_NOUNS)
    name = f"{verb}_{noun}{'s' if r.random() < 0.3 else ''}"
    if r.random() < 0.15:
        name = "_" + name
    template = r.choice(PY_BODIES)
    params = ["self"] if method else []
    params.append(f"{other}{'s' if '{m}s' in template else ''}: {r.choice(PY_TYPES)}")
    params.append(f"{noun}: {r.choice(PY_TYPES)}")
    if r.random() < 0.5:
        params.append("*, strict: bool = False")
    ret = r.choice(PY_TYPES + ["None"])
    fmt = {"n": noun, "m": other}
    doc = [r.choice(PY_DOC_SUMMARY).format(**fmt)]
    if r.random() < 0.6:
        doc += ["", r.choice(PY_DOC_BODY).format(**fmt)]
    if r.random() < 0.5:
        doc += ["", "Args:", f"    {other}: the {other} to read from.", f"    {noun}: the {noun} being processed.",
                "", "Returns:", f"    The resulting {noun}, or an empty value when there is none."]
    comment = r.choice(PY_COMMENTS).format(**fmt)
    body = template.format(n=noun, m=other, a=r.choice(["name", "kind", "status", "owner"]),
                                      fn=f"{r.choice(PY_VERBS)}_{r.choice(PY_NOUNS)}", c=comment)
    ind = indent + "    "
    lines = [f"{indent}def {name}({', '.join(params)}) -> {ret}:"]
    if len(doc) == 1:
        lines.append(f'{ind}"""{doc[0]}"""')
    else:
        lines.append(f'{ind}"""{doc[0]}')
        lines += [(ind + d) if d else "" for d in doc[1:]]
        lines.append(f'{ind}"""')
    lines += [ind + line for line in body.split("\n")]
    return "\n".join(lines)


def _py_class(r: Random) -> str:
    a, b = r.choice(PY_NOUNS), r.choice(PY_NOUNS)
    name = _py_camel(a, b) if a != b else _py_camel(a, "Store")
    lines = []
    if r.random() < 0.5:
        lines += ["@dataclass", f"class {name}:", f'    """A {a} {b} as stored in the index."""', ""]
        for fname in r.sample(["name", "kind", "status", "owner", "size", "created", "tags", "path", "offset"], 4):
            t = r.choice(list(PY_DEFAULTS))
            lines.append(f"    {fname}: {t} = {PY_DEFAULTS[t]}")
    else:
        lines += [f"class {name}:", f'    """Keeps {a}s per {b} and flushes them in batches."""', "",
                  "    def __init__(self, root: Path, *, limit: int = 1000) -> None:",
                  "        self.root = Path(root)", "        self.limit = limit",
                  f"        self._{a}s: dict[str, list[Any]] = defaultdict(list)",
                  "        self._lock = threading.Lock()"]
    for _ in range(r.randint(1, 3)):
        lines += ["", _py_function(r, "    ", method=True)]
    return "\n".join(lines)


def python_source(n: int, seed: int | str = 0) -> str:
    """A plausible Python module of roughly `n` characters (cut between top-level definitions)."""
    r = _rng("py", seed)
    noun = r.choice(PY_NOUNS)
    head = [f'"""{_cap(noun)} handling: {r.choice(PY_DOC_SUMMARY).format(n=noun, m=r.choice(PY_NOUNS)).lower()}',
            "", r.choice(PY_DOC_BODY).format(n=noun, m=r.choice(PY_NOUNS)), '"""', "",
            "from __future__ import annotations", ""]
    imports = [i for i in PY_IMPORTS if i in _PY_REQUIRED] + r.sample([i for i in PY_IMPORTS if i not in _PY_REQUIRED], 2)
    head += sorted(imports, key=lambda s: (s.startswith("from"), s))
    head += ["", "logger = logging.getLogger(__name__)", "",
             f"DEFAULT_TIMEOUT = {r.choice([5, 10, 30, 60])}", f"DEFAULT_TTL = {r.choice([60, 300, 3600])}",
             f"MAX_RETRIES = {r.randint(3, 8)}", f"MAX_ITEMS = {r.choice([100, 1000, 10_000])}",
             "_LOCK = threading.Lock()", "_CACHE: dict[Any, tuple[float, Any]] = {}"]
    parts = ["\n".join(head)]
    size = len(parts[0])
    while True:
        block = _py_class(r) if r.random() < 0.3 else _py_function(r)
        if size + 3 + len(block) > n and len(parts) > 1:
            break
        parts.append(block)
        size += 3 + len(block)
    return "\n\n\n".join(parts) + "\n"


# =============================================================================================
# Markdown documents (README, user guide, changelog)
# =============================================================================================

DOC_EN = [
    "The `{p} import` command reads CSV files and stores the records in a local SQLite database.",
    "Before the first run, create a config file and point it at the directory with your statements.",
    "If the config file is missing, {p} prints a warning and falls back to the defaults.",
    "All dates are stored as ISO 8601 in UTC.",
    "Importing the same file twice does not create duplicates: records are compared by checksum.",
    "For large archives, run the import with `--batch-size 1000`.",
    "A line that cannot be parsed is skipped and reported with its line number.",
    "Input files must be UTF-8; pass `--encoding` for anything else.",
    "Use `--dry-run` to check your settings without changing any data.",
    "Network requests are retried up to five times with exponential backoff.",
    "Run the tests with `make test` and the linters with `make lint`.",
    "Every record has a date, an amount, a currency, a description and an account id.",
    "Environment variables take precedence over the config file.",
]
DOC_RU = [
    "Команда `{p} import` читает файлы CSV и сохраняет записи в локальную базу данных.",
    "Перед первым запуском создайте файл настроек и укажите в нём путь к каталогу с выписками.",
    "Если файл настроек не найден, программа выводит предупреждение и использует значения по умолчанию.",
    "Все даты хранятся в формате ISO 8601 и в часовом поясе UTC.",
    "Повторный импорт того же файла не создаёт дубликатов: записи сравниваются по контрольной сумме.",
    "Для больших архивов рекомендуется запускать импорт с ключом `--batch-size 1000`.",
    "Строка, которую не удалось разобрать, пропускается, а её номер попадает в отчёт.",
    "Кодировка входных файлов — UTF-8; другую кодировку нужно указать параметром `--encoding`.",
    "Чтобы проверить настройки, не изменяя данных, используйте режим `--dry-run`.",
    "Сетевые запросы повторяются до пяти раз с нарастающей задержкой.",
    "Тесты запускаются командой `make test`, проверка стиля — командой `make lint`.",
    "Каждая запись содержит дату, сумму, валюту, описание и номер счёта.",
    "Переменные окружения имеют приоритет над файлом настроек.",
]
DOC_HEADINGS = {
    "en": ["Installation", "Quick start", "Configuration", "Usage", "Command line", "Import formats", "CSV files",
           "Troubleshooting", "Development", "Running the tests", "Release process", "FAQ", "Known issues"],
    "ru": ["Установка", "Быстрый старт", "Настройка", "Использование", "Командная строка", "Форматы импорта",
           "Файлы CSV", "Решение проблем", "Разработка", "Запуск тестов", "Выпуск версии", "Частые вопросы"],
}
DOC_TITLES = {"en": ["User guide", "Importing data", "Overview"], "ru": ["Руководство пользователя", "Импорт данных", "Обзор"]}
DOC_COMMANDS = ["pip install -e '.[dev]'", "make test", "{p} import data/2025.csv --dry-run",
                "export {P}_CONFIG=~/.config/{p}.toml", "{p} report --format json > report.json", "{p} --version"]


def markdown_doc(n: int, seed: int | str = 0, lang: str = "en", project: str = "ledger", kind: str = "guide") -> str:
    """A README / user guide (lang "en" or "ru") or, with kind="changelog", an English changelog."""
    r = _rng(f"md-{lang}-{kind}", seed)
    fill = lambda s: s.replace("{p}", project).replace("{P}", project.upper())  # noqa: E731
    if kind == "changelog":
        parts, (major, minor) = ["# Changelog", "All notable changes to this project are documented here."], (2, 9)
        day = date(2026, 3, 2)
        while sum(len(x) + 2 for x in parts) < n:
            parts.append(f"## [{major}.{minor}.0] - {day.isoformat()}")
            day -= timedelta(days=r.randint(12, 60))
            for section in r.sample(["Added", "Changed", "Fixed", "Removed"], r.randint(1, 3)):
                parts.append(f"### {section}\n\n" + "\n".join(
                    f"- {r.choice(_COMMIT_MSGS).format(m=r.choice(PY_NOUNS))}." for _ in range(r.randint(1, 5))))
            major, minor = (major, minor - 1) if minor else (major - 1, 9)
        return "\n\n".join(parts) + "\n"
    sentences = DOC_RU if lang == "ru" else DOC_EN
    parts = [f"# {project} — {r.choice(DOC_TITLES[lang])}", fill(" ".join(r.sample(sentences, 3)))]
    size = len(parts[0]) + len(parts[1]) + 2
    headings = r.sample(DOC_HEADINGS[lang], len(DOC_HEADINGS[lang]))
    while True:
        h = headings[(len(parts) - 2) % len(headings)]
        block = [f"## {h}" if len(parts) - 2 < len(headings) else f"## {h} ({(len(parts) - 2) // len(headings) + 1})", fill(" ".join(r.sample(sentences, r.randint(2, 4))))]
        if r.random() < 0.5:
            block.append("```bash\n" + "\n".join(fill(c) for c in r.sample(DOC_COMMANDS, r.randint(1, 3))) + "\n```")
        if r.random() < 0.5:
            block.append("\n".join("- " + fill(x) for x in r.sample(sentences, r.randint(2, 4))))
        text = "\n\n".join(block)
        if size + len(text) + 2 > n:
            break
        parts.append(text)
        size += len(text) + 2
    return "\n\n".join(parts) + "\n"


# =============================================================================================
# Shell output
# =============================================================================================

SHELL_KINDS = ("ls", "pytest", "git_log", "grep", "git_status", "pip_list")
_FILES = ["app.py", "cli.py", "config.py", "models.py", "parser.py", "storage.py", "utils.py",
          "client.py", "server.py", "cache.py", "auth.py", "schema.py", "worker.py", "routes.py",
          "__init__.py", "settings.toml", "README.md", "requirements.txt", "Makefile", "setup.cfg"]
_DIRS = ["src", "tests", "docs", "scripts", "migrations", "static", "templates", "build", ".github"]
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
_DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
_AUTHORS = [("Alice Novak", "alice@example.com"), ("Dmitri Volkov", "dmitri@example.com"),
            ("Wei Zhang", "wei.zhang@example.com"), ("Sato Haruki", "haruki@example.com"),
            ("Sam Porter", "sam@example.com"), ("Priya Raman", "priya@example.com")]
_COMMIT_MSGS = [
    "Fix off-by-one in {m} pagination", "Add retry with backoff to {m} client",
    "Refactor {m} parser into smaller functions", "Bump dependencies", "Handle empty {m} gracefully",
    "Speed up {m} lookup with an index", "Document the {m} format", "Remove dead {m} code",
    "Make {m} tests deterministic", "Log {m} failures with context", "Cache {m} results per session",
    "Validate {m} before writing", "Support UTF-8 in {m} names", "Split {m} module",
]
_PKGS = ["aiohttp", "anyio", "attrs", "black", "certifi", "charset-normalizer", "click", "coverage",
         "fastapi", "h11", "httpcore", "httpx", "idna", "iniconfig", "jinja2", "markupsafe", "mypy",
         "numpy", "orjson", "packaging", "pandas", "pluggy", "pydantic", "pydantic-core", "pytest",
         "pytest-cov", "python-dateutil", "pytz", "pyyaml", "requests", "rich", "ruff", "six",
         "sniffio", "sqlalchemy", "starlette", "typer", "typing-extensions", "urllib3", "uvicorn"]


def _hex(r: Random, k: int) -> str:
    return "".join(r.choice("0123456789abcdef") for _ in range(k))


def _ls(r: Random, n: int) -> list[str]:
    lines = [f"total {r.randint(40, 900)}"]
    names = sorted(set(r.sample(_FILES, 12) + r.sample(_DIRS, 4)))
    while sum(len(x) + 1 for x in lines) < n:
        for name in names:
            is_dir = name in _DIRS
            perm = "drwxr-xr-x" if is_dir else r.choice(["-rw-r--r--", "-rw-r--r--", "-rwxr-xr-x"])
            size = 4096 if is_dir else r.randint(120, 48_000)
            lines.append(f"{perm} {r.randint(1, 9):>2} dev dev {size:>6} {r.choice(_MONTHS)} {r.randint(1, 28):>2} "
                         f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d} {name}")
        names = [f"{r.choice(PY_VERBS)}_{r.choice(PY_NOUNS)}.py" for _ in range(12)]
        lines.append("")
        lines.append(f"./src/{r.choice(PY_NOUNS)}:")
        lines.append(f"total {r.randint(40, 900)}")
    return lines


def _pytest(r: Random, n: int) -> list[str]:
    total = 0
    lines = ["============================= test session starts ==============================",
             "platform linux -- Python 3.11.7, pytest-8.3.2, pluggy-1.5.0",
             "rootdir: /home/dev/proj", "configfile: pyproject.toml", "plugins: cov-5.0.0, anyio-4.4.0",
             "collected {total} items", ""]
    files = []
    body_size = sum(len(x) + 1 for x in lines) + 900
    failed = []
    while body_size < n:
        f = f"tests/test_{r.choice(PY_NOUNS)}{r.choice(['', 's', '_api', '_cli', '_io'])}.py"
        k = r.randint(8, 52)
        marks = "".join("F" if r.random() < 0.02 else ("s" if r.random() < 0.03 else ".") for _ in range(k))
        for i, m in enumerate(marks):
            if m == "F":
                failed.append((f, f"test_{r.choice(PY_VERBS)}_{r.choice(PY_NOUNS)}_{i}"))
        files.append((f, marks))
        total += k
        body_size += len(f) + len(marks) + 10
    done = 0
    for f, marks in files:
        done += len(marks)
        lines.append(f"{f} {marks}".ljust(73) + f"[{done * 100 // max(total, 1):>3}%]")
    lines[5] = f"collected {total} items"
    if failed:
        lines += ["", "=================================== FAILURES ==================================="]
        for f, t in failed[:3]:
            a, b = r.randint(1, 9), r.randint(1, 9)
            lines += [f"_{'_' * 20} {t} {'_' * 20}", "",
                      f"    def {t}():", f"        result = {r.choice(PY_VERBS)}_{r.choice(PY_NOUNS)}(SAMPLE)",
                      f">       assert result.count == {b}", f"E       assert {a} == {b}",
                      f"E        +  where {a} = Result(count={a}, items=[...]).count", "",
                      f"{f}:{r.randint(10, 400)}: AssertionError"]
        lines += ["=========================== short test summary info ============================"]
        lines += [f"FAILED {f}::{t} - AssertionError: assert ..." for f, t in failed]
    skipped = sum(m.count("s") for _, m in files)
    summary = f" {len(failed)} failed, " if failed else " "
    summary += f"{total - len(failed) - skipped} passed, {skipped} skipped in {r.uniform(1, 40):.2f}s "
    lines.append(summary.center(80, "="))
    return lines


def _git_log(r: Random, n: int) -> list[str]:
    lines: list[str] = []
    day, hour = 28, 18
    while sum(len(x) + 1 for x in lines) < n:
        name, mail = r.choice(_AUTHORS)
        msg = r.choice(_COMMIT_MSGS).format(m=r.choice(PY_NOUNS))
        lines += [f"commit {_hex(r, 40)}", f"Author: {name} <{mail}>",
                  f"Date:   {r.choice(_DAYS)} Feb {day} {hour:02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d} 2026 +0100",
                  "", f"    {msg}"]
        if r.random() < 0.4:
            lines += ["", f"    {_en_tech(r)}"]
        lines.append("")
        hour -= r.randint(1, 7)
        if hour < 8:
            hour, day = 19, max(1, day - 1)
    return lines


def _en_tech(r: Random) -> str:
    return r.choice(PY_DOC_BODY).format(n=r.choice(PY_NOUNS), m=r.choice(PY_NOUNS))


def _grep(r: Random, n: int) -> list[str]:
    src = python_source(max(n * 3, 4000), f"grep-{r.random()}").split("\n")
    lines = []
    while sum(len(x) + 1 for x in lines) < n:
        i = r.randrange(len(src))
        if src[i].strip():
            lines.append(f"src/{r.choice(PY_NOUNS)}/{r.choice(_FILES[:14])}:{i + 1}:{src[i]}")
    return lines


def _git_status(r: Random, n: int) -> list[str]:
    lines = ["On branch main", "Your branch is up to date with 'origin/main'.", "",
             "Changes not staged for commit:", '  (use "git add <file>..." to update what will be committed)',
             '  (use "git restore <file>..." to discard changes in working directory)']
    while sum(len(x) + 1 for x in lines) < n - 120:
        lines.append(f"\tmodified:   src/{r.choice(PY_NOUNS)}/{r.choice(_FILES[:14])}")
    lines += ["", "Untracked files:", '  (use "git add <file>..." to include in what will be committed)',
              f"\tnotes/{r.choice(PY_NOUNS)}.md", "", 'no changes added to commit (use "git add" and/or "git commit -a")']
    return lines


def _pip_list(r: Random, n: int) -> list[str]:
    lines = ["Package                  Version", "------------------------ ---------"]
    i = 0
    while sum(len(x) + 1 for x in lines) < n:
        name = _PKGS[i % len(_PKGS)] + ("" if i < len(_PKGS) else f"-plugin{i // len(_PKGS)}")
        lines.append(f"{name:<24} {r.randint(0, 9)}.{r.randint(0, 30)}.{r.randint(0, 12)}")
        i += 1
    return lines


_SHELL = {"ls": _ls, "pytest": _pytest, "git_log": _git_log, "grep": _grep,
          "git_status": _git_status, "pip_list": _pip_list}
SHELL_COMMANDS = {"ls": "ls -la", "pytest": "python -m pytest -q", "git_log": "git log -n 40",
                  "grep": "grep -rn 'def ' src/", "git_status": "git status", "pip_list": "pip list"}


def shell_output(n: int, seed: int | str = 0, kind: str | None = None) -> str:
    """Terminal output of roughly `n` characters: one `kind` (see SHELL_KINDS), or, without a
    kind, a session of several commands each introduced by a ``$ command`` line."""
    r = _rng("sh", seed)
    if kind is not None:
        return "\n".join(_SHELL[kind](r, n)) + "\n"
    out: list[str] = []
    size = 0
    while size < n:
        k = r.choice(SHELL_KINDS)
        chunk = [f"dev@box:~/proj$ {SHELL_COMMANDS[k]}"] + _SHELL[k](r, min(n - size, r.randint(600, 4000)))
        out += chunk
        size += sum(len(x) + 1 for x in chunk)
    return "\n".join(out) + "\n"


# =============================================================================================
# JSON output
# =============================================================================================

JSON_KINDS = ("issues", "search", "rows", "metrics")
_LABELS = ["bug", "enhancement", "docs", "performance", "good first issue", "needs-triage", "ci", "security"]


def _json_item(kind: str, r: Random, i: int) -> dict:
    noun, other = r.choice(PY_NOUNS), r.choice(PY_NOUNS)
    when = f"2026-0{r.randint(1, 3)}-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}Z"
    if kind == "issues":
        return {"number": 1200 + i, "title": r.choice(_COMMIT_MSGS).format(m=noun),
                "state": r.choice(["open", "open", "closed"]), "user": {"login": r.choice(_AUTHORS)[1].split("@")[0]},
                "labels": sorted(r.sample(_LABELS, r.randint(0, 3))), "comments": r.randint(0, 40),
                "created_at": when, "body": _en_tech(r) + " " + _en_tech(r)}
    if kind == "search":
        return {"rank": i + 1, "title": f"How to {r.choice(PY_VERBS)} a {noun} in Python",
                "url": f"https://docs.example.org/{noun}/{r.choice(PY_VERBS)}-{other}.html",
                "snippet": _en_tech(r), "score": round(r.uniform(0.2, 0.99), 3)}
    if kind == "rows":
        return {"id": 10_000 + i, "name": f"{noun}-{_hex(r, 6)}", "owner": r.choice(_AUTHORS)[0],
                "status": r.choice(["active", "pending", "archived", "failed"]), "size_bytes": r.randint(100, 10**7),
                "tags": sorted(r.sample(PY_NOUNS, 3)), "updated_at": when, "checksum": _hex(r, 32)}
    return {"metric": f"{noun}.{r.choice(['latency_ms', 'errors', 'requests', 'queue_depth'])}",
            "host": f"web-{r.randint(1, 12):02d}", "window": "5m",
            "points": [[1767225600 + 300 * j, round(r.uniform(0, 500), 2)] for j in range(6)]}


def json_output(n: int, seed: int | str = 0, kind: str | None = None) -> str:
    """Pretty-printed JSON (valid, ASCII) of roughly `n` characters, as an API-like tool returns it."""
    r = _rng("json", seed)
    kind = kind or r.choice(JSON_KINDS)
    items: list[dict] = []
    size = 80
    while size < n:
        item = _json_item(kind, r, len(items))
        items.append(item)
        size += len(json.dumps(item, indent=2)) + 6 + 4 * 6
    doc = {"kind": kind, "total_count": len(items) + r.randint(0, 500), "page": 1, "per_page": len(items),
           "items": items}
    return json.dumps(doc, indent=2)
