"""Hypothesis strategies for hostile upstream responses that carry an elicitation.

A ``Plan`` holds every choice (era, carrier, payload, status, Content-Type fields and charset,
the charset the body is really written in, content codings, SSE framing, JSON quirks, HTTP
framing); ``Plan.render(request_id)`` turns it into the exact response. The knobs follow the
classes of issue 9 and what the clients do with a body:

* httpx2 (Python SDK): ``charset=`` of the (joined) Content-Type picks the codec of the SSE
  text (``errors="replace"``, unknown names fall back to UTF-8); every Content-Encoding field and
  comma-separated token is applied (gzip, deflate zlib or raw; unknown tokens are skipped); the
  transport dispatches on ``content-type.lower().startswith(...)`` and parses 4xx bodies whose type
  starts with ``application/json``; JSON is read as UTF-8 bytes (duplicate keys: last wins).
* undici + TypeScript SDK: charset ignored (UTF-8, BOM stripped); codings applied by fetch;
  media type parsed (``content-type`` package); the newer SDK parses any 400 body as JSON.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import strategies as st

from tests.differential import hostile
from tests.differential.hostile import (
    BODY_CODECS,
    Carrier,
    Era,
    JsonQuirks,
    Response,
    SseBlock,
    SseStream,
)

MEDIA_TYPES_JSON = (
    "application/json",
    "Application/JSON",
    "application/json;",
    "application/jsonx",
    "application/json5",
    "application/json-seq",
    "application/json+x",
    "application/json, text/html",
    " application/json",
    "application/problem+json",
    "text/json",
    "application/x-ndjson",
    "text/plain",
)
MEDIA_TYPES_SSE = (
    "text/event-stream",
    "TEXT/Event-Stream",
    "text/event-stream;",
    "text/event-streams",
    "text/event-stream, application/json",
    " text/event-stream",
    "text/event-stream ",
    "text/plain",
    "application/octet-stream",
)
CHARSET_NAMES = (
    "utf-8",
    "UTF-8",
    "utf8",
    "utf-8-sig",
    "utf-16",
    "UTF-16LE",
    "utf-16be",
    "utf16",
    "utf-32",
    "utf-7",
    "unicode-1-1-utf-7",
    "latin-1",
    "iso-8859-1",
    "cp1252",
    "unicode_escape",
    "raw_unicode_escape",
    "hz",
    "iso2022_jp",
    "cp037",
    "x-unknown-charset",
    "",
)
# the codec the body bytes are really written in, for a declared name
NAME_TO_CODEC = {
    "utf-8": "utf-8",
    "UTF-8": "utf-8",
    "utf8": "utf-8",
    "utf-8-sig": "utf-8-sig",
    "utf-16": "utf-16",
    "UTF-16LE": "utf-16-le",
    "utf-16be": "utf-16-be",
    "utf16": "utf-16",
    "utf-32": "utf-32",
    "utf-7": "utf-7",
    "unicode-1-1-utf-7": "utf-7",
    "latin-1": "latin-1",
    "iso-8859-1": "latin-1",
    "cp1252": "cp1252",
    "unicode_escape": "unicode_escape",
    "raw_unicode_escape": "raw_unicode_escape",
    "hz": "hz",
    "iso2022_jp": "iso2022_jp",
    "cp037": "cp037",
}
CODING_TOKENS = (
    "identity",
    "gzip",
    "deflate",
    "br",
    "zstd",
    "x-gzip",
    "GZIP",
    " deflate ",
    "compress",
    "x-unknown",
)
DEFLATE_VARIANTS = (
    "deflate-zlib",
    "deflate-raw",
    "deflate-stored",
    "deflate-zlib-stored",
    "deflate-stored-utf8",
)
STATUSES: tuple[int, ...] = (
    200,
    200,
    200,
    201,
    202,
    203,
    206,
    299,
    300,
    302,
    307,
    308,
    400,
    400,
    401,
    403,
    404,
)
STATUSES += (405, 409, 422, 429, 500, 502, 503)
# U+0A0A / U+0D0A / U+0A0D are "\n\n", "\n\r", "\r\n" bytes in UTF-16: blank lines to a
# reader that takes the body for UTF-8
PREFIXES = ("", "", "\ufeff", "\ufeff\ufeff", "\ufffe", "\u200b", "\u2060", "\ufeff\r\n", "\u0a0a")
EVENT_NAMES = (
    "message",
    "message",
    None,
    "Message",
    "message\0",
    "message ",
    " message",
    "elicitation",
    "",
)
EXTRA_LINES = (
    ": ping",
    ":",
    "foo: bar",
    "data",
    "event: message",
    "id: 1",
    "retry: 1",
    "Data: x",
    "\ufeffdata: x",
    "event",
    ": \u0a0a",
    ": \u0d0a\u0d0a",
    ": \u0a0d",
)
NEWLINES = ("\r\n", "\n", "\r")
SUFFIXES = ("", "", "", ": \u0a0a", "\u0a0a", ": \u0d0a\u0d0a", "\r\n: \u0a0a\r\n")
HIDING = {
    "utf-7": ("utf-7-forced", "utf-7-forced"),
    "unicode_escape": ("unicode_escape-forced", "unicode_escape-forced"),
    "raw_unicode_escape": ("unicode_escape-forced",),
}
SPACES = ("", " ", "\n", "\t", "\r\n ", "  ")
TRAILERS = ("", "", "\n", " ", "\0", "\ufeff", " {}", "\n\n")
BOMS = ("", "", "\ufeff", "\0", "\u200b")
RAW_SEPARATORS = ("", "", "\u2028", "\u0085", "\x0b", "\x0c", "\x1c", "\u2029", "\u0a0a", "\u0d0a")
DECOY_KEYS = ("method", "result", "error", "params", "requestedSchema", "inputRequests", "mode")
ESCAPABLE_KEYS: tuple[str, ...] = (
    "method",
    "params",
    "result",
    "error",
    "data",
    "elicitations",
    "inputRequests",
)
ESCAPABLE_KEYS += ("requestedSchema", "properties", "mode", "url", "jsonrpc", "id", "code")
ESCAPABLE_VALUES: tuple[str, ...] = (
    "elicitation/create",
    "form",
    "url",
    "password",
    "one_time_code",
    "2.0",
)
ESCAPABLE_VALUES += ("input_required",)


@dataclass(frozen=True)
class BlockPlan:
    event: str | None = "message"
    extra_lines: tuple[str, ...] = ()
    id: str | None = None
    retry: str | None = None
    splits: tuple[int, ...] = ()  # token indices where a new data line starts
    newlines: tuple[str, ...] = ("\r\n",)
    data_colon: str = ": "


@dataclass(frozen=True)
class Plan:
    era: Era
    carrier: Carrier
    payload: str
    body_kind: str  # "json" or "sse"
    status: int = 200
    content_types: tuple[tuple[str, str], ...] = (("Content-Type", "text/event-stream"),)
    codec: str = "utf-8"
    encodings: tuple[tuple[str, str], ...] = ()  # (header name, value) Content-Encoding fields
    apply_codings: bool = True
    deflate_variant: str = "deflate-zlib"
    quirks: JsonQuirks = field(default_factory=JsonQuirks)
    blocks: tuple[BlockPlan, ...] = (BlockPlan(),)
    junk_blocks: tuple[int, ...] = ()  # after which message a junk block (index into EXTRA)
    prefix: str = ""
    terminated: bool = True
    suffix: str = ""
    framing: str = "length"
    chunks: tuple[int, ...] = ()
    transfer_encoding: tuple[str, ...] = ()
    state: bool = True
    followup: Plan | None = None  # the answer to the next request (e.g. the gateway's own retry)

    def messages(self, request_id: Any) -> list[dict[str, Any]]:
        return hostile.messages_for(
            self.carrier, self.payload, request_id, era=self.era, state=self.state
        )

    def text(self, request_id: Any) -> str:
        messages = self.messages(request_id)
        if self.body_kind == "json":
            return "".join(hostile.write_json(messages[0], self.quirks))
        blocks: list[SseBlock] = []
        for i, message in enumerate(messages):
            bp = self.blocks[i % len(self.blocks)]
            # only the elicitation carries the quirks; the tool result is plain
            tokens = hostile.write_json(message, self.quirks if i == 0 else JsonQuirks())
            parts = _split(tokens, bp.splits)
            blocks.append(
                SseBlock(
                    data_parts=tuple(parts),
                    event=bp.event,
                    id=bp.id,
                    retry=bp.retry,
                    extra_lines=bp.extra_lines,
                    data_colon=bp.data_colon,
                    newlines=bp.newlines,
                )
            )
            for junk in self.junk_blocks:
                if junk % len(messages) == i:
                    line = EXTRA_LINES[junk % len(EXTRA_LINES)]
                    blocks.append(SseBlock(data_parts=(), event=None, extra_lines=(line,)))
        return hostile.write_sse(
            SseStream(tuple(blocks), self.prefix, self.terminated, self.suffix)
        )

    def body(self, request_id: Any) -> bytes:
        body = hostile.encode_text(self.text(request_id), self.codec)
        if not self.apply_codings:
            return body
        # the codings as httpx2 reads them: every field, comma-split, stripped, lowercased,
        # applied in order (identity and unknown tokens skipped)
        for _, value in self.encodings:
            for token in value.split(","):
                name = token.strip().lower()
                if name == "gzip":
                    body = hostile.apply_coding(body, "gzip")
                elif name == "deflate":
                    body = hostile.apply_coding(body, self.deflate_variant)
        return body

    def render(self, request_id: Any) -> Response:
        headers = list(self.content_types) + list(self.encodings)
        return Response(
            status=self.status,
            headers=tuple(headers),
            body=self.body(request_id),
            framing=self.framing,  # type: ignore[arg-type]
            chunks=self.chunks,
            transfer_encoding=self.transfer_encoding,
        )


def _split(tokens: list[str], splits: tuple[int, ...]) -> list[str]:
    if not splits or len(tokens) < 2:
        return ["".join(tokens)]
    cuts = sorted({1 + s % (len(tokens) - 1) for s in splits})
    parts: list[str] = []
    start = 0
    for cut in cuts:
        parts.append("".join(tokens[start:cut]))
        start = cut
    parts.append("".join(tokens[start:]))
    return parts


# -- strategies --------------------------------------------------------------------------------

# Strategy objects are built once and reused (building them per draw cost more than the gateway).


@functools.cache
def _sampled(options: tuple[Any, ...]) -> st.SearchStrategy[Any]:
    return st.sampled_from(options)


@functools.cache
def _ints(low: int, high: int) -> st.SearchStrategy[int]:
    return st.integers(low, high)


@functools.cache
def _lists(
    elements: st.SearchStrategy[Any], min_size: int = 0, max_size: int | None = None
) -> st.SearchStrategy[list[Any]]:
    return st.lists(elements, min_size=min_size, max_size=max_size)


_BOOLS = st.booleans()


@st.composite
def content_type_value(draw: st.DrawFn, kind: str) -> tuple[str, str | None]:
    """A Content-Type value and the charset name it declares (None: no charset)."""
    media = draw(_sampled(MEDIA_TYPES_SSE if kind == "sse" else MEDIA_TYPES_JSON))
    if draw(_ints(0, 3)) == 0:
        return media, None
    name = draw(_sampled(CHARSET_NAMES))
    spelling = draw(
        _sampled(
            (
                "; charset={}",
                ";charset={}",
                '; charset="{}"',
                "; CHARSET={}",
                "; charset*=utf-8''{}",
                "; charset=utf-8; charset={}",
                "; boundary=x; charset={}",
            )
        )
    )
    return media + spelling.format(name), name


header_name = _sampled(
    (
        "Content-Type",
        "content-type",
        "CONTENT-TYPE",
        "Content-type",
    )
)


@st.composite
def block_plans(draw: st.DrawFn) -> BlockPlan:
    plain = draw(_ints(0, 3)) == 0
    if plain:
        return BlockPlan(newlines=(draw(_sampled(NEWLINES)),))
    event = draw(_sampled(EVENT_NAMES))
    extra = tuple(draw(_lists(_sampled(EXTRA_LINES), max_size=2)))
    with_id = draw(_BOOLS)
    return BlockPlan(
        event=event,
        extra_lines=extra,
        id=draw(
            _sampled(
                (
                    "1",
                    "2:15",
                    "",
                    "a\0b",
                )
            )
        )
        if with_id
        else None,
        retry="1"
        if with_id
        else draw(
            _sampled(
                (
                    None,
                    None,
                    "1",
                    "x",
                )
            )
        ),
        splits=tuple(draw(_lists(_ints(0, 200), max_size=3))),
        newlines=tuple(draw(_lists(_sampled(NEWLINES), min_size=1, max_size=3))),
        data_colon=draw(
            _sampled(
                (
                    ": ",
                    ": ",
                    ":",
                    ":  ",
                )
            )
        ),
    )


@st.composite
def json_quirks(draw: st.DrawFn) -> JsonQuirks:
    if draw(_ints(0, 3)) == 0:
        return JsonQuirks()
    return JsonQuirks(
        space=draw(_sampled(SPACES)),
        escape_keys=frozenset(draw(_lists(_sampled(ESCAPABLE_KEYS), max_size=3))),
        escape_values=frozenset(draw(_lists(_sampled(ESCAPABLE_VALUES), max_size=2))),
        duplicate=draw(
            _sampled(
                (
                    "none",
                    "none",
                    "decoy-first",
                    "decoy-last",
                )
            )
        ),
        decoy_key=draw(_sampled(DECOY_KEYS)),
        big_number=draw(_ints(0, 9)) == 0,
        lone_surrogate=draw(_ints(0, 9)) == 0,
        raw_separators=draw(_sampled(RAW_SEPARATORS)),
        bom=draw(_sampled(BOMS)),
        trailer=draw(_sampled(TRAILERS)),
    )


_BLOCK_PLANS = block_plans()
_JSON_QUIRKS = json_quirks()

CARRIERS: tuple[tuple[Era, Carrier, str], ...] = (
    ("handshake", "server-request", "sse"),
    ("handshake", "server-request", "json"),
    ("handshake", "url-required", "json"),
    ("handshake", "url-required", "sse"),
    ("modern", "url-required", "json"),
    ("modern", "input-required", "json"),
    ("modern", "input-required", "sse"),
    # across eras: what a hostile server may send anyway (appended: saved examples keep indices)
    ("modern", "server-request", "sse"),
    ("modern", "server-request", "json"),
    ("handshake", "input-required", "json"),
    ("handshake", "input-required", "sse"),
)


@st.composite
def plans(
    draw: st.DrawFn, *, full_client: bool = False, carriers: tuple[Carrier, ...] | None = None
) -> Plan:
    """A hostile response plan; one in four also scripts a hostile answer to the next request
    (a 2026 all-blocked round makes the gateway retry upstream by itself). ``carriers``: only
    these carriers for the first answer."""
    plan = draw(single_plans(full_client=full_client, carriers=carriers))
    if draw(_ints(0, 3)) == 0:
        plan = replace(plan, followup=draw(single_plans(full_client=full_client)))
    return plan


@st.composite
def single_plans(
    draw: st.DrawFn, *, full_client: bool = False, carriers: tuple[Carrier, ...] | None = None
) -> Plan:
    """A hostile response plan. ``full_client``: only shapes after which a whole SDK client
    call completes (no handshake-era server request in a JSON body)."""
    allowed = tuple(
        c
        for c in CARRIERS
        if not (full_client and c[1:] == ("server-request", "json"))
        and (carriers is None or c[1] in carriers)
    )
    era, carrier, kind = draw(_sampled(allowed))
    form = carrier != "url-required" and draw(_ints(0, 3)) > 0
    phishing = draw(_ints(0, 3)) > 0
    payload = ("phishing-" if phishing else "benign-") + ("form" if form else "url")

    status = 200 if draw(_ints(0, 2)) > 0 else draw(_sampled(STATUSES))
    n_types = draw(
        _sampled(
            (
                1,
                1,
                1,
                1,
                0,
                2,
            )
        )
    )
    content_types: list[tuple[str, str]] = []
    declared: str | None = None
    for _ in range(n_types):
        value, name = draw(content_type_value(kind))
        content_types.append((draw(header_name), value))
        declared = declared or name
    same = NAME_TO_CODEC.get(declared or "", "utf-8")
    # the same codec, mostly, and then its spellings that write no letter directly
    candidates = (same, *HIDING.get(same, ()))
    codec = draw(_sampled(candidates)) if draw(_ints(0, 2)) > 0 else draw(_sampled(BODY_CODECS))

    encodings: list[tuple[str, str]] = []
    if draw(_ints(0, 2)) == 0 and draw(_BOOLS):
        # a field a reader of the first field only takes for "no coding", then a real one
        first = draw(
            _sampled(
                (
                    "identity",
                    "x-unknown",
                    "br",
                    "zstd",
                    "identity, identity",
                )
            )
        )
        second = draw(
            _sampled(
                (
                    "deflate",
                    "gzip",
                    "deflate, gzip",
                    "gzip, deflate",
                )
            )
        )
        encodings += [("Content-Encoding", first), ("Content-Encoding", second)]
    elif draw(_ints(0, 2)) == 0:
        for _ in range(draw(_ints(1, 3))):
            tokens = draw(_lists(_sampled(CODING_TOKENS), min_size=1, max_size=3))
            name = draw(
                _sampled(
                    (
                        "Content-Encoding",
                        "content-encoding",
                    )
                )
            )
            encodings.append((name, ", ".join(tokens)))

    framing = draw(
        _sampled(
            (
                "length",
                "length",
                "chunked",
                "close",
            )
        )
    )
    plan = Plan(
        era=era,
        carrier=carrier,
        payload=payload,
        body_kind=kind,
        status=status,
        content_types=tuple(content_types),
        codec=codec,
        encodings=tuple(encodings),
        apply_codings=draw(_ints(0, 9)) > 0,
        deflate_variant=draw(_sampled(DEFLATE_VARIANTS)),
        quirks=draw(_JSON_QUIRKS),
        framing=framing,
        chunks=tuple(draw(_lists(_ints(1, 64), max_size=3))) if framing == "chunked" else (),
        transfer_encoding=tuple(
            draw(
                _lists(
                    _sampled(
                        (
                            "chunked",
                            "identity",
                            "gzip",
                        )
                    ),
                    max_size=1,
                )
            )
        )
        if framing == "chunked" and draw(_ints(0, 9)) == 0
        else (),
        state=draw(_BOOLS),
    )
    if kind == "sse":
        plan = replace(
            plan,
            blocks=tuple(draw(_lists(_BLOCK_PLANS, min_size=1, max_size=2))),
            junk_blocks=tuple(draw(_lists(_ints(0, 50), max_size=2))),
            prefix=draw(_sampled(PREFIXES)),
            terminated=draw(_ints(0, 9)) > 0,
            suffix=draw(_sampled(SUFFIXES)),
        )
    return plan
