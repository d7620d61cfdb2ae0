"""Long-term memory search: tantivy BM25 beside SQLite FTS5, the hybrid query, and recall.

    python -m bench.memory_bench [--quick]

One generated corpus of 100,000 note-like chunks (10,000 with ``--quick``): English
words drawn with a seeded RNG, common words on a Zipf curve, each chunk about one or two
topics (work, travel, health, the house...), with people's names, numbers and ticket
ids, 60-150 words (100 on average) in short sentences and bullet lines, ten chunks to a
daily log.

keywords
    `Bm25Index` (tantivy, English stemming, built with ``add_many``) beside an SQLite
    FTS5 table (porter tokenizer, contentless, ranked by ``bm25()``) over the same
    chunks: build time, size on disk, and the latency of the same 500 queries of 2-4
    words (top 10), interleaved query by query. Both are OR queries of the query's
    words (what `Bm25Index.search` asks of tantivy; each word quoted for FTS5), and
    every tantivy search is a user's (all the chunks are the agent's, so no other
    owner's are excluded).

hybrid
    The whole corpus embedded once with `LocalEmbedder` (WordLlama, 256 dimensions) as
    the memory app does it, one vector per window of WINDOW_TOKENS of each chunk, in
    batches of ``memory.embedding.batch_size``: its throughput, then per query the
    query's embedding, BM25 top 40, `VectorSet.candidates` (the 40 nearest chunks and
    the cosine of the keyword side's) and `merge`.

recall
    recall@5 on the labelled set in bench/memory_queries.json (written and committed
    before any recall was measured): facts planted in given chunks, with distractor
    lines elsewhere, each found by a query that paraphrases it with or without its
    words. BM25 alone, FTS5 alone, vectors alone, and the hybrid merge with
    `SearchConfig`'s weights, with and without its ``min_score``. A diagnostic: whether
    the labelled chunk is among the merge's 40 + 40 candidates at all.

The machine's other work shows in the latencies: compare the two sides of one run.
Figures are printed and written to bench/results/memory.json.
"""

from __future__ import annotations

import datetime
import json
import random
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from beamclaw_memory import Bm25Index, EmbeddingConfig, LocalEmbedder, SearchConfig, VectorSet, merge
from beamclaw_memory._bm25 import query_words
from beamclaw_memory._chunker import windows
from beamclaw_memory._index import WINDOW_TOKENS

from ._cli import quick_flag, save

SEED = 20240601
QUERIES_FILE = Path(__file__).parent / "memory_queries.json"
LATENCY_QUERIES = 500
WARM_UP = 50
TOP = 10
CANDIDATES = 40
#: Who searches: a user of the agent (the agent's own chunks have owner "").
OWNERS = ("", "bench-user")


def _words(text: str) -> list[str]:
    return text.split()


# --- the vocabulary -------------------------------------------------------------------------
# In rough order of frequency: the Zipf rank of a word is its place in FUNCTION + GENERAL.

FUNCTION = _words("""
the to and a of in for is on it that with i this at be we was have not are but as from so will need about
by or if do my can all up out just should they get our one when then there what more next also some after
before still been would has had no them any new did him her he she their like than only into over because
maybe again very too how why who which where while until since both each
""")

GENERAL = _words("""
time day week today tomorrow yesterday morning evening night month year call meeting email note list plan
idea thing people work home team project task issue question answer update change problem start end first
last good better best bad great small big long short old free busy ready done open close closed left right
back front side way place room part point case fact reason result number price cost money pay paid buy
bought sold order send sent got make made take took give gave keep kept find found think thought know knew
see saw look looked feel felt want wanted try tried use used ask asked tell told say said talk talked write
wrote read run ran move moved wait waited help helped follow book booked share shared fix fixed finish
finished planned remember forgot forget check checked agree agreed decide decided discuss discussed mention
mentioned suggest suggested prepare prepared bring brought leave stay come came go went meet met visit
visited return returned arrive arrived miss missed cancel cancelled confirm confirmed schedule scheduled
remind reminder deadline priority draft final version copy file folder document link page message chat
phone text letter form account password address name date hour minute weekend monday tuesday wednesday
thursday friday saturday sunday january february march april may june july august september october
november december spring summer autumn winter early late soon later often usually always never sometimes
probably actually really quite almost enough half whole every other another same different important urgent
quick slow easy hard simple clear sure likely possible expensive cheap young high low full empty hot cold
warm nice happy tired sick quiet loud fast safe real main local public private personal general special
extra several few many most less least own able around across along behind below above under near far
inside outside together alone already yet once twice instead though although however anyway otherwise
perhaps exactly mostly nearly finally recently currently especially certainly definitely basically
line step steps detail details option options choice plan plans goal goals level size amount total rest
piece pieces set group kind sort type side top bottom middle corner edge area space half quarter couple
pair dozen lot bit hundred thousand million first second third fourth fifth one two three four five six
seven eight nine ten eleven twelve twenty thirty forty fifty minutes hours days weeks months years
friend friends person family child kids woman man boy girl guy neighbour boss colleague customer client
guest owner member staff company business office shop store market bank school hospital station street
road town city country world house flat building car bus train bike plane boat water food coffee tea beer
wine milk bread fruit meat fish lunch dinner breakfast snack cup glass bottle bag box table chair bed desk
door window wall floor light paper pen card key keys phone screen computer laptop picture photo music song
film movie show game story news report paper article letter list map sign board notice
begin began begun break broke broken build built carry carried catch caught choose chose clean cleaned
collect collected compare compared complete completed consider considered continue continued cover covered
create created cut deal dealt deliver delivered describe described design designed develop developed
drive drove drop dropped eat ate enjoy enjoyed expect expected explain explained fall fell fill filled
fit happen happened hear heard hold held hope hoped improve improved include included increase increased
introduce join joined learn learned lend lent let lie lift listen listened live lived lose lost love
loved manage managed matter mean meant measure mind note noted notice noticed offer offered pass passed
pick picked play played print printed produce promise promised protect provide provided pull push put
reach reached receive received recommend recommended reduce reduced refer remain remove removed repeat
replace replaced reply replied report reported require required rest review reviewed save saved sell seem
set settle show showed sign signed sit sleep slept solve solved sort speak spoke spend spent stand stood
stop stopped study suppose support supported switch teach taught test tested thank throw touch train
trained travel travelled turn turned understand understood wake walk walked wash watch watched wear wore
win won wish wonder worry worried
accept accepted achieve act action active activity add added addition adjust admit advance advice afford
afraid age agency ago aim air allow allowed alternative amazing analysis angry announce annual anxious
apart apparently appear apply approach approve approved argue argument arrange arrangement article aside
aspect assume attach attached attempt attend attention attitude available average avoid aware award awful
balance ban base basic basis bear beat beautiful become bell belong benefit beside bet beyond bill birth
bit bite blame blank blind block blow blue board body bold bone border bored boring borrow bother bought
brain branch brand brave breath brief bright brilliant broad brown budget burn button cable calm campaign
capable capital care career careful carefully cash cause celebrate centre century certain chain chance
channel chapter charge charity chart cheap cheaper check chief chip circle claim class classic clever
click climb clock closely clothes cloud club coach coast code coin collapse column combine comfortable
comment commit common community compete complain complex concern concerned condition confident conflict
connect connection constant contact contain content context contract control convince cook cool cope
correct count counter couple courage course crazy crew crisis criticism cross crowd crucial cry culture
curious current curve cycle damage danger dark data dead dear debate decent deep default define degree
delay delete demand deny depend deposit depth deserve desire despite destroy detail device diet differ
difficult dig direct direction dirty disappointed discount discover dish display distance divide doubt
downtown drag draw dream dress drink dry due duty eager earn ease east economy edge edit effect effort
elderly election element else emergency emotion employ encourage energy engage engine enter entire entry
environment equal error escape essential estimate evaluate event eventually evidence exact exam example
excellent except exchange excited exciting excuse exercise exist exit expand expense experience expert
explore express extend extreme face facility factor fail failure fair faith false familiar famous fan
fancy fault favour favourite fear feature fee feeling field fight figure fine fire firm fix flat flexible
float flow fly focus fold folk fond force foreign formal former forward frame frankly freeze fresh fridge
fuel fun function fund funny further future gain gap garage gather gear generous gentle gift glad global
grab grade grant grateful green ground grow growth guard guess guide habit hall handle hang hardly harm
hate head health heat heavy height hell hero hide highlight hill hire history hit hole holiday honest
honestly horrible host huge human humour hungry hurry hurt ideal identify ignore ill image imagine impact
impress improve inch income indeed index individual indoor industry influence inform initial injury input
insist install instance intend intense interest internal invest invite involve iron item jacket job joke
journey judge jump junior justify keen kick kid kill kitchen knock label lack lady land language large
launch law lay lazy lead leader leaf lean least leave legal lemon length lesson lift limit link liquid
load loan lock logic lonely loose lovely luck lucky mad mail major male mark massive master match mate
material meal media medium memory mental menu mess metal method mile minor mirror mistake mix mobile mode
model modern moment mood motor mount mouth murder nail narrow nasty nation natural nature neat neck
negative nerve nervous network noise normal nose novel numerous nurse object obvious obviously occasion
odd offer officer official oil okay operate opinion opposite orange ordinary organise origin outcome
output overall owe pace pack pain paint pair panel panic park partner party path patient pattern peace
peak penalty percent perfect perform period permanent phase physical pile pilot pin pink pipe pitch
plain planet plastic plate pleasant pleased plenty pocket poem point pole police policy polite pool poor
pop popular position positive post pot potential pound pour power practical practice praise pray precise
prefer pregnant premium present press pressure pretty prevent previous pride primary prime prior prize
process profit progress proof proper property proposal protest proud prove pure purpose quality quantity
queue quote race rain raise range rapid rare rate rather raw reaction realise rear reasonable recent
record recover red reflect refuse region regular reject relax release relevant reliable relief rely
remote rent repair request rescue research reserve resolve resource respect respond response responsible
restaurant reveal reward rich ride ring rise risk river rock role roll roof root rough round route row
rule rush sad salt sample satisfied sauce scale scene score screen sea search season seat secret section
secure select senior sense sensible separate series serious serve session severe shade shake shape sharp
shelf shift shine ship shock shoot shot shout shut shy silent silly silver similar single sink site
skill skin sky slide slight slightly smart smell smile smoke smooth snow soft soil solid somewhat sore
sorry sound source south spare speed spell split spot spread square staff stage stair standard stare
state steady steal steel stick stiff stock stomach stone storage storm straight strange stress strict
strike string strong structure struggle student stuff style subject succeed success suddenly sugar
suggest suit suitable sum supply surface surprise surprised survey suspect sweet swim symbol system tail
talent tank tap target task taste tax technical technique tend term terrible terrific thick thin threat
ticket tidy tie tight tiny tip title tone tool tooth topic tough tour towards track trade traffic tree
trend trick trip trouble truck trust truth tune twin typical ugly unable uncle unique unit unless unlike
upset upstairs urban useful useless usual valley value variety various vast vehicle venue view village
visible voice volume vote wage warn waste wave weak wealth weather weekly weigh weight weird welcome west
wet wheel whilst white wide wild wind wise wonderful wood wooden worth wrap wrong yard yellow zone
""")

TOPICS: dict[str, str] = {
    "work": (
        "promotion appraisal workload overtime sprint stakeholder vendor proposal headcount offsite office "
        "manager colleague client contract salary promotion report presentation deadline feedback roadmap "
        "quarter budget goals strategy hiring interview candidate onboarding review retrospective standup "
        "slides agenda"
    ),
    "software": (
        "kubernetes container docker terraform refactor commit branch merge outage incident dashboard metrics "
        "server deploy release bug tests pipeline database migration backup logs disk memory cpu cluster "
        "staging production config api endpoint latency error crash rollback monitoring alert"
    ),
    "travel": (
        "airline layover jetlag hostel ferry passport visa customs souvenir sightseeing museum flight airport "
        "hotel passport visa luggage train ticket booking trip vacation holiday beach city tour map taxi "
        "station terminal gate delay boarding rental suitcase itinerary"
    ),
    "health": (
        "cholesterol insulin asthma injection scan xray surgeon specialist referral bandage cough doctor "
        "appointment clinic hospital medicine prescription pharmacy dentist checkup blood pressure allergy "
        "vaccine symptoms fever headache pain therapy physio sleep diet vitamins nurse results"
    ),
    "finance": (
        "accountant dividend shares portfolio inflation overdraft statement direct debit allowance bank "
        "account tax taxes invoice receipt payment transfer savings loan mortgage interest rate insurance "
        "premium pension budget spending bills salary refund credit card debt"
    ),
    "home": (
        "carpet tiles ceiling radiator socket wiring plaster insulation hinge gutter chimney kitchen bathroom "
        "bedroom living garage basement roof window door floor wall paint heating boiler plumber electrician "
        "repair leak tap sink drain furniture sofa shelf lamp"
    ),
    "garden": (
        "pruning seedlings cucumber lettuce beans strawberries apple shrubs rake wheelbarrow garden plants "
        "flowers seeds soil tomatoes roses lawn hedge compost watering shed tools pots fence tree trees herbs "
        "basil weeds harvest greenhouse mulch bulbs"
    ),
    "cooking": (
        "curry stew roast grill marinade dough pastry yoghurt cinnamon pepper tomato recipe dinner lunch "
        "breakfast soup pasta rice bread cake oven flour sugar butter eggs milk cheese lemon garlic onion "
        "chicken vegetables salad sauce spices baking"
    ),
    "family": (
        "nephew niece stepmother teenager babysitter lunchbox uniform allowance bedtime kids children son "
        "daughter school teacher homework parents mom dad grandma grandpa brother sister cousin aunt uncle "
        "baby nursery birthday party toys playground holidays"
    ),
    "car": (
        "clutch gearbox windscreen exhaust alignment bodywork dealership mileage carwash car tyres engine oil "
        "garage mechanic service parking fuel petrol insurance licence registration brakes battery inspection "
        "dashboard wipers highway traffic accident repair lease"
    ),
    "fitness": (
        "sprint intervals triathlon kettlebell squats plank treadmill rowing personal running gym workout "
        "training race marathon swimming pool yoga stretching weights coach steps distance pace shoes bike "
        "cycling hike hiking trail stamina recovery"
    ),
    "reading": (
        "memoir thriller paperback hardcover bookmark audiobook translation publisher book books novel author "
        "chapter library reading story poetry essay review recommendation series fiction history biography "
        "kindle shelf quotes podcast article magazine"
    ),
    "music": (
        "violin saxophone orchestra melody lyrics metronome amplifier ukulele music concert guitar piano "
        "lessons song songs band album playlist tickets festival practice chords drums singer choir rehearsal "
        "tuning headphones vinyl"
    ),
    "shopping": (
        "receipt voucher checkout basket sneakers trousers sweater backpack shopping store supermarket "
        "groceries market delivery return refund discount sale coupon order package size jacket shoes shirt "
        "gift gifts wrapping cart"
    ),
    "pets": (
        "hamster rabbit parrot aquarium kibble harness microchip neutering dog cat puppy kitten vet food walk "
        "leash collar vaccination fleas grooming litter treats toy kennel shelter adoption training bowl"
    ),
    "legal": (
        "solicitor lawsuit verdict testimony witness mediation inheritance will lawyer attorney contract "
        "lease landlord tenant rent deposit clause agreement signature notary court claim complaint rights "
        "permit licence documents copy"
    ),
    "moving": (
        "landlord inventory furnished unfurnished storage van relocation postcode apartment flat move moving "
        "boxes packing movers neighbours neighbourhood street building lift keys viewing agent deposit "
        "utilities internet router electricity water gas"
    ),
    "outdoors": (
        "kayak canoe waterfall glacier cliff meadow binoculars compass weather rain snow wind storm sun "
        "forecast lake river mountain hut trail camping tent forest beach sea island picnic walk view sunset"
    ),
    "events": (
        "bridesmaid groom bride honeymoon buffet dj rsvp seating wedding party birthday anniversary guests "
        "invitations venue dress suit photographer catering cake music dance speech celebration dinner toast "
        "ceremony reception"
    ),
    "learning": (
        "flashcards pronunciation essay assignment semester tuition scholarship course class lesson exam "
        "study homework language spanish french german vocabulary grammar teacher tutor practice certificate "
        "university degree lecture quiz"
    ),
    "support": (
        "outage downtime hotfix workaround triage feedback survey onboarding customer ticket support issue "
        "complaint refund escalation response request feature account login access reset password bug "
        "priority sla"
    ),
    "admin": (
        "renewal expiry reference stamp courier filing archive notarised email inbox calendar form forms "
        "paperwork appointment registration renewal application deadline post letter stamp envelope printer "
        "scanner signature office"
    ),
    "tech": (
        "firmware bluetooth printer monitor adapter cable upgrade smartwatch laptop phone tablet charger "
        "battery screen keyboard mouse update software app apps backup cloud storage wifi router password "
        "camera headphones warranty repair"
    ),
    "photography": (
        "aperture shutter zoom filter negatives darkroom raw crop camera lens photos photo album prints edit "
        "lightroom exposure portrait landscape tripod flash sunrise shots gallery frame"
    ),
    "volunteering": (
        "soup kitchen mentoring tutoring donations volunteers hamper volunteer shelter charity donation "
        "community event food bank meeting schedule shift cleanup neighbours school fundraiser raffle"
    ),
    "security": (
        "encryption vpn firewall twofactor authenticator credentials audit password passwords backup keys "
        "token login account phishing alert breach update lock camera alarm door safe"
    ),
    "conference": (
        "panel poster proceedings attendees lanyard breakout conference talk slides speaker venue hotel badge "
        "workshop keynote networking sponsor schedule abstract registration travel dinner"
    ),
    "chores": (
        "ironing dusting polishing defrosting detergent bleach sponge cleaning laundry dishes vacuum trash "
        "recycling groceries chores towels sheets ironing windows dust mop"
    ),
    "energy": (
        "kilowatt tariff smart meter boiler emissions battery inverter electricity bill heat pump solar "
        "panels meter gas heating insulation thermostat power energy radiator"
    ),
}

NAMES = _words("""
Marta Jonas Priya Luca Sam Aiko Omar Elena Tom Nadia Ben Rosa Kofi Ines Sofia Anna Peter Maria David Sarah
James Lisa Mark Julia Paul Emma Alex Chris Laura Daniel Nina Leo Mia Oscar Eva Hugo Clara Felix Lena Max
Ivan Yuki Chen Ahmed Fatima Lucas Noah Olivia Grace Henry Isabel Victor Zoe Mateo Amara Ravi Jonah Hannah
Diego Tara
""")


class Corpus:
    """The generated chunks (deterministic for a seed): text, and the daily log each is in."""

    def __init__(self, count: int, seed: int = SEED) -> None:
        self.rng = random.Random(seed)
        general = list(dict.fromkeys(FUNCTION + GENERAL))
        self.general = general
        self.general_weights = _cumulative([1 / (rank + 2) ** 1.05 for rank in range(len(general))])
        self.topics = {name: list(dict.fromkeys(words.split())) for name, words in TOPICS.items()}
        self.topic_weights = {
            topic: _cumulative([1 / (rank + 1) ** 0.6 for rank in range(len(words))])
            for topic, words in self.topics.items()
        }
        self.vocabulary = set(general) | {w for ws in self.topics.values() for w in ws} | {n.lower() for n in NAMES}
        first_day = datetime.date(2015, 1, 1)
        self.texts = [self._chunk() for _ in range(count)]
        self.docs = [f"memory/{first_day + datetime.timedelta(days=n // 10)}.md" for n in range(count)]

    def _word(self, topic: str) -> str:
        rng = self.rng
        r = rng.random()
        if r < 0.28:
            return rng.choices(self.topics[topic], cum_weights=self.topic_weights[topic])[0]
        if r < 0.31:
            return rng.choice(NAMES)
        if r < 0.33:
            return rng.choice((f"{rng.randint(1, 500)}", f"{rng.randint(6, 21)}:{rng.choice(('00', '15', '30'))}"))
        if r < 0.34:
            return rng.choice(("INC", "PR", "JIRA", "ticket", "#")) + f"-{rng.randint(100, 99_999)}"
        return rng.choices(self.general, cum_weights=self.general_weights)[0]

    def _sentence(self, topic: str) -> str:
        words = [self._word(topic) for _ in range(self.rng.randint(5, 14))]
        return words[0][:1].upper() + words[0][1:] + " " + " ".join(words[1:]) + "."

    def _chunk(self) -> str:
        rng = self.rng
        topics = rng.sample(sorted(self.topics), 2)
        budget = rng.randint(60, 120)
        lines = [f"## {topics[0].title()} {rng.choice(NAMES)}"] if rng.random() < 0.3 else []
        words = 0
        while words < budget:
            topic = topics[0] if rng.random() < 0.75 else topics[1]
            line = self._sentence(topic)
            if rng.random() < 0.4:
                line = f"{line} {self._sentence(topic)}"
            lines.append(f"- {line}" if rng.random() < 0.5 else line)
            words += line.count(" ") + 1
        return "\n".join(lines)

    def plant(self, chunk: int, line: str) -> None:
        """*line* among the lines of *chunk*, in the middle."""
        lines = self.texts[chunk].split("\n")
        lines.insert(len(lines) // 2, line)
        self.texts[chunk] = "\n".join(lines)


def _cumulative(weights: list[float]) -> list[float]:
    total, out = 0.0, []
    for w in weights:
        total += w
        out.append(total)
    return out


def _latency_queries(corpus: Corpus, count: int) -> list[str]:
    """*count* queries of 2-4 words: mostly one topic's words, some names, some other words."""
    rng = random.Random(SEED + 1)
    content = [w for w in corpus.general if w not in set(FUNCTION)]
    weights = _cumulative([1 / (rank + 2) for rank in range(len(content))])
    queries = []
    for _ in range(count):
        topic = rng.choice(sorted(corpus.topics))
        words: list[str] = []
        for _ in range(rng.randint(2, 4)):
            r = rng.random()
            if r < 0.6:
                words.append(rng.choice(corpus.topics[topic]))
            elif r < 0.75:
                words.append(rng.choice(NAMES))
            else:
                words.append(rng.choices(content, cum_weights=weights)[0])
        queries.append(" ".join(words))
    return queries


# --- the two keyword indexes ----------------------------------------------------------------


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _fts_query(query: str) -> str:
    """The query's words (as `Bm25Index` takes them), each quoted, any of them (OR, as tantivy)."""
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in query_words(query))


class Fts5:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = sqlite3.connect(path)
        self.db.execute("CREATE VIRTUAL TABLE fts USING fts5(text, content='', tokenize='porter unicode61')")

    def build(self, texts: Sequence[str]) -> None:
        with self.db:
            self.db.executemany("INSERT INTO fts(rowid, text) VALUES (?, ?)", enumerate(texts))

    def search(self, query: str, limit: int) -> list[int]:
        match = _fts_query(query)
        if not match:
            return []
        rows = self.db.execute("SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT ?", (match, limit))
        return [rowid for (rowid,) in rows]


def _percentile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def _ms(samples: Sequence[float]) -> dict[str, float]:
    return {"p50_ms": round(_percentile(samples, 0.5) * 1e3, 4), "p99_ms": round(_percentile(samples, 0.99) * 1e3, 4)}


def _timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def _keywords(corpus: Corpus, queries: list[str], home: Path) -> tuple[dict[str, Any], Bm25Index, Fts5]:
    rows = [(n, corpus.docs[n], "", text) for n, text in enumerate(corpus.texts)]
    build_tantivy, bm25 = _timed(lambda: _built(home / "tantivy", rows))
    fts = Fts5(home / "fts5.db")
    build_fts, _ = _timed(lambda: fts.build(corpus.texts))
    size_tantivy, size_fts = _folder_bytes(home / "tantivy"), (home / "fts5.db").stat().st_size
    for query in queries[:WARM_UP]:
        bm25.search(query, OWNERS, TOP)
        fts.search(query, TOP)
    tantivy_s, fts_s, overlap = [], [], []
    for n, query in enumerate(queries):
        runs = [("t", lambda q=query: bm25.search(q, OWNERS, TOP)), ("f", lambda q=query: fts.search(q, TOP))]
        found: dict[str, list[int]] = {}
        for name, run in runs if n % 2 else runs[::-1]:  # alternate which goes first
            seconds, hits = _timed(run)
            (tantivy_s if name == "t" else fts_s).append(seconds)
            found[name] = [h[0] for h in hits] if name == "t" else hits
        overlap.append(len(set(found["t"]) & set(found["f"])) / max(1, len(found["t"])))
    segments = len(list((home / "tantivy").glob("*.idx")))
    result = {
        "tantivy": {"build_s": round(build_tantivy, 3), "bytes": size_tantivy, "segments": segments, **_ms(tantivy_s)},
        "fts5": {"build_s": round(build_fts, 3), "bytes": size_fts, **_ms(fts_s)},
        "top10_overlap": round(sum(overlap) / len(overlap), 3),
    }
    return result, bm25, fts


def _built(folder: Path, rows: list[tuple[int, str, str, str]]) -> Bm25Index:
    index = Bm25Index(folder)
    index.add_many(rows)
    return index


# --- vectors and the hybrid query -----------------------------------------------------------


def _embedded(corpus: Corpus) -> tuple[dict[str, Any], LocalEmbedder, VectorSet]:
    """The corpus embedded as the memory app does it: each chunk's windows of WINDOW_TOKENS."""
    load_s, embedder = _timed(LocalEmbedder)
    batch = EmbeddingConfig().batch_size
    started = time.perf_counter()
    pieces = [(n, piece) for n, text in enumerate(corpus.texts) for piece in windows(text, WINDOW_TOKENS)]
    texts = [piece for _, piece in pieces]
    parts = [embedder.embed_sync(texts[i : i + batch]) for i in range(0, len(texts), batch)]
    embed_s = time.perf_counter() - started
    vectors = VectorSet([n for n, _ in pieces], [""] * len(pieces), np.concatenate(parts))
    figures = {
        "model": embedder.model, "load_s": round(load_s, 3), "batch_size": batch, "embed_s": round(embed_s, 2),
        "windows": len(pieces), "chunks_per_s": round(len(corpus.texts) / embed_s),
        "windows_per_s": round(len(pieces) / embed_s),
    }  # fmt: skip
    return figures, embedder, vectors


def _hybrid(queries: list[str], bm25: Bm25Index, embedder: LocalEmbedder, vectors: VectorSet) -> dict[str, Any]:
    config = SearchConfig()
    for query in queries[:WARM_UP]:
        vectors.search(embedder.embed_sync([query])[0], OWNERS, CANDIDATES)
    parts: dict[str, list[float]] = {"embed": [], "bm25": [], "vectors": [], "merge": [], "total": []}
    for query in queries:
        started = time.perf_counter()
        embed_s, vector = _timed(lambda q=query: embedder.embed_sync([q])[0])
        bm25_s, keyword_hits = _timed(lambda q=query: bm25.search(q, OWNERS, CANDIDATES))
        found = [cid for cid, _ in keyword_hits]
        vectors_s, vector_hits = _timed(lambda v=vector, f=found: vectors.candidates(v, OWNERS, CANDIDATES, f))
        merge_s, _ = _timed(
            lambda k=keyword_hits, v=vector_hits: merge(
                k, v, vector_weight=config.vector_weight, bm25_weight=config.bm25_weight, min_score=config.min_score
            )
        )
        parts["total"].append(time.perf_counter() - started)
        for name, seconds in (("embed", embed_s), ("bm25", bm25_s), ("vectors", vectors_s), ("merge", merge_s)):
            parts[name].append(seconds)
    return {name: _ms(samples) for name, samples in parts.items()}


# --- recall ---------------------------------------------------------------------------------


def _recall(
    labelled: list[dict[str, Any]], k: int, *, bm25: Bm25Index, fts: Fts5, embedder: LocalEmbedder, vectors: VectorSet
) -> dict[str, Any]:
    """recall@k of each method, and a diagnostic: whether the label is among the merge's
    candidates at all."""
    config = SearchConfig()

    def hybrid(keyword_hits: list[tuple[int, float]], vector_hits: list[tuple[int, float]], floor: float) -> list[int]:
        merged = merge(
            keyword_hits, vector_hits, vector_weight=config.vector_weight, bm25_weight=config.bm25_weight,
            min_score=floor,
        )  # fmt: skip
        return [s.chunk_id for s in merged[:k]]

    found: dict[str, dict[str, int]] = {}
    for item in labelled:
        query_vector = embedder.embed_sync([item["query"]])[0]
        keyword_hits = bm25.search(item["query"], OWNERS, CANDIDATES)
        vector_hits = vectors.search(query_vector, OWNERS, CANDIDATES)
        scored = vectors.candidates(query_vector, OWNERS, CANDIDATES, [cid for cid, _ in keyword_hits])
        answers = {
            "bm25 (tantivy)": [cid for cid, _ in keyword_hits[:k]],
            "fts5": fts.search(item["query"], k),
            "vectors": [cid for cid, _ in vector_hits[:k]],
            f"hybrid, min_score {config.min_score}": hybrid(keyword_hits, scored, config.min_score),
            "hybrid, no min_score": hybrid(keyword_hits, scored, 0.0),
            f"in bm25's top {CANDIDATES}": [cid for cid, _ in keyword_hits],
            f"in the vectors' top {CANDIDATES}": [cid for cid, _ in vector_hits],
        }
        for method, ids in answers.items():
            tally = found.setdefault(method, {"all": 0, "keywords": 0, "synonyms": 0})
            hit = int(item["chunk"] in ids)
            tally["all"] += hit
            tally[item["kind"]] += hit
    kinds = {kind: sum(1 for i in labelled if i["kind"] == kind) for kind in ("keywords", "synonyms")}
    return {"k": k, "queries": len(labelled), "by_kind": kinds, "found": found}


# --- the run --------------------------------------------------------------------------------


def _mb(count: int) -> str:
    return f"{count / 1e6:.1f} MB"


def _report(result: dict[str, Any]) -> None:
    corpus, kw = result["corpus"], result["keywords"]
    t, f = kw["tantivy"], kw["fts5"]
    print(
        f"corpus: {corpus['chunks']:,} chunks, {corpus['words'] / 1e6:.1f} M words ({corpus['mean_words']:.0f} a "
        f"chunk), vocabulary {corpus['vocabulary']:,}; generated in {corpus['generate_s']:.1f} s"
    )
    print(f"\nkeyword search, {kw['queries']} queries of 2-4 words, top {TOP} (OR of the words), interleaved")
    print(f"  {'':22}{'tantivy (Bm25Index)':>22}{'SQLite FTS5 bm25()':>22}{'tantivy/FTS5':>15}")
    table = [
        ("index build", f"{t['build_s']:.2f} s", f"{f['build_s']:.2f} s", t["build_s"] / f["build_s"]),
        ("size on disk", _mb(t["bytes"]), _mb(f["bytes"]), t["bytes"] / f["bytes"]),
        ("query p50", f"{t['p50_ms']:.3f} ms", f"{f['p50_ms']:.3f} ms", t["p50_ms"] / f["p50_ms"]),
        ("query p99", f"{t['p99_ms']:.3f} ms", f"{f['p99_ms']:.3f} ms", t["p99_ms"] / f["p99_ms"]),
    ]
    for name, a, b, ratio in table:
        print(f"  {name:22}{a:>22}{b:>22}{ratio:>14.2f}x")
    met = t["p50_ms"] <= 5 and t["p50_ms"] < f["p50_ms"]
    print(f"  target tantivy p50 <= 5 ms and faster than FTS5: {'met' if met else 'NOT met'}")
    print(f"  top-10 agreement between the two: {kw['top10_overlap']:.0%}; tantivy segments: {t['segments']}")
    e, h = result["embedding"], result["hybrid"]
    print(
        f"\nlocal embedder {e['model']}: loaded in {e['load_s']:.2f} s; {corpus['chunks']:,} chunks in "
        f"{e['embed_s']:.1f} s = {e['chunks_per_s']:,} chunks/s ({e['windows']:,} windows, "
        f"{e['windows_per_s']:,}/s, batches of {e['batch_size']})"
    )
    print(
        f"hybrid query (embed + BM25 top {CANDIDATES} + vectors top {CANDIDATES} + merge): p50 "
        f"{h['total']['p50_ms']:.2f} ms, p99 {h['total']['p99_ms']:.2f} ms"
    )
    print(
        f"  parts p50: query embedding {h['embed']['p50_ms']:.3f} ms, BM25 {h['bm25']['p50_ms']:.3f} ms, "
        f"vectors {h['vectors']['p50_ms']:.3f} ms over {corpus['chunks']:,}, merge {h['merge']['p50_ms']:.3f} ms"
    )
    r = result["recall"]
    kinds = r["by_kind"]
    print(
        f"\nrecall@{r['k']} on {r['queries']} labelled queries (bench/memory_queries.json): "
        f"{kinds['keywords']} share words with their fact, {kinds['synonyms']} only synonyms"
    )
    print(f"  {'':34}{'all':>8}{'keywords':>12}{'synonyms':>12}")
    for method, tally in r["found"].items():
        if method.startswith("in bm25"):
            print(f"  diagnostic: is it among the merge's {CANDIDATES} + {CANDIDATES} candidates at all")
        cells = [
            f"{tally['all']}/{r['queries']}",
            f"{tally['keywords']}/{kinds['keywords']}",
            f"{tally['synonyms']}/{kinds['synonyms']}",
        ]
        print(f"  {method:34}{cells[0]:>8}{cells[1]:>12}{cells[2]:>12}  ({tally['all'] / r['queries']:.0%})")


def main() -> None:
    quick = quick_flag(__doc__)
    count = 10_000 if quick else 100_000
    labelled = json.loads(QUERIES_FILE.read_text())
    generate_s, corpus = _timed(lambda: Corpus(count))
    for item in labelled["queries"]:
        corpus.plant(item["chunk"], item["fact"])
        for distractor in item["distractors"]:
            corpus.plant(distractor["chunk"], distractor["text"])
    words = sum(text.count(" ") + text.count("\n") + 1 for text in corpus.texts)
    queries = _latency_queries(corpus, LATENCY_QUERIES)
    result: dict[str, Any] = {
        "corpus": {
            "chunks": count, "words": words, "mean_words": words / count, "vocabulary": len(corpus.vocabulary),
            "generate_s": round(generate_s, 2), "seed": SEED,
        },
    }  # fmt: skip
    home = Path(tempfile.mkdtemp(prefix="memory-bench-"))
    try:
        keywords, bm25, fts = _keywords(corpus, queries, home)
        result["keywords"] = {"queries": len(queries), **keywords}
        result["embedding"], embedder, vectors = _embedded(corpus)
        result["hybrid"] = _hybrid(queries, bm25, embedder, vectors)
        result["recall"] = _recall(
            labelled["queries"], labelled["recall_at"], bm25=bm25, fts=fts, embedder=embedder, vectors=vectors
        )
        fts.db.close()
        bm25.close()
    finally:
        shutil.rmtree(home, ignore_errors=True)
    _report(result)
    save("memory", result)


if __name__ == "__main__":
    main()
