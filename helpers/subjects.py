"""What `helpers.checker` holds to the specification: a handler, and the world around it, as a *subject*.

A subject tells the checker how to start a history (`begin`: a fresh provider, each wallet at its opening
balance), how to send one request (`call`), how much money moved (`money`, read back), and which faults it can
be given (`faults`, armed before each request by `arm`, told afterwards whether they `fired`). One per shape of
code the collection teaches:

    Subject         a handler shaped like notebook 06's `pay(key, payload, invocation, hook=..., caller=...)`
    DebitSubject    a debit function, `debit(table, wallet, amount, request_id)` (03-05, 08, the exercises)
    HttpSubject     notebook 09's endpoint, over real HTTP
    OutboxSubject   notebook 10's handler on Postgres, and its outbox worker
    RecordSubject   a write that is not money (01's status update, 02's sign-up): truthful and live only

Faults reach a subject's DynamoDB clients through `helpers.wire`: lost answers (`LostResponses`), DynamoDB's
failure answers (`ErrorResponses`), and a transaction still in progress.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

from botocore.exceptions import ClientError

from .catalogue import ANSWERS
from .dynamodb_errors import DISTINCT_KINDS, IN_PROGRESS, IN_PROGRESS_APPLIED, ErrorResponses
from .faults import LostResponses
from .fidelity.faithful_moto import answered_by
from .history import ANSWER, LASTING, LOST, PROVIDER_DOWN, PROVIDER_LOST, STILL_IN_PROGRESS, Fault
from .services.payment_provider import PaymentProvider
from .specification import CONTRACT_HEADERS, REPLAY_MARKS, SUCCESS, UNKNOWN, classify, in_words
from .tables import as_dynamodb_json, as_python
from .tables import open_wallet as _open_wallet
from .tables import read_balance as _read_balance
from .wire import WrittenKeys, client_of, watched

WALLETS = {"alice": 1000, "bob": 1000}    # each history's wallets, and their opening balances


def _injectors() -> tuple[LostResponses, ErrorResponses, ErrorResponses]:
    """A subject's faults: lost answers, DynamoDB's failure answers, and a transaction still in progress."""
    return (LostResponses(), ErrorResponses(kinds=DISTINCT_KINDS, conflict_item=-1),
            ErrorResponses(kinds=(IN_PROGRESS, IN_PROGRESS_APPLIED), operations={"TransactWriteItems"}))


class Subject:
    """A 06-shaped handler and its surroundings, read from its module globals.

    Other shapes (a debit function, a handler on Postgres) subclass it: the machine only calls `begin`, `call`,
    `money`, `drain`, `arm` and `words`, and reads `clock`, `lease`, `retention`, `faults`, `interleaves` and
    the attributes below, which narrow the search for a subject that needs less of it (an exercise's few
    seconds): `invocations`, `crashes` and `waits` False leave out what does not reach the handler,
    `writes` bounds which of a request's writes a fault falls on, `faults_alike` draws each fault alike.
    """

    faults = ("lost", "answer", "in progress", "provider down")   # what can go wrong around one request
    explores = True                 # check_handler places each catalogue event at each point first (helpers.explorer)
    interleaves = True              # another request may run at a hook step or before any of its DynamoDB requests
    between_calls = True            # ... before any of its DynamoDB requests too (False: at hook steps only)
    lasting = True                  # a failure answer may last through the handler's own resends of a transaction
    opening: dict[str, int] = WALLETS                              # each wallet's balance as a history begins
    invocations = True                                             # the handler is told its invocation ID
    crashes = True                                                 # it calls `hook(step)`: a crash can fall there
    waits = True                                                   # leases and retention windows matter to it
    writes = 5                                                     # a fault falls on one of a request's first 5
    attempts = 4             # how often the handler sends a write DynamoDB did not apply (ATTEMPTS in its module): a
                             # fault that lasts ("answers") answers a transaction that many times in a row, then ends
    faults_alike = False     # True: every fault (and none) drawn alike from one list, not its kind first -- a short
                             # search (an exercise's) then meets each one soon
    # The design's declared limits, which the reference model (specification.Model) applies: the largest amount
    # it takes (MAX_AMOUNT in its module; None: DynamoDB's 38 digits), and whether it refuses a debit the wallet
    # cannot pay (GUARDS_OVERDRAFT). `at_limits`: the histories also draw amounts at those limits.
    max_amount: int | None = None
    guards_overdraft = False
    at_limits = True
    world = True             # the world may change between steps: a wallet closed, reopened, paid from elsewhere
    wallets_of: dict[str, set[str]] | None = None   # caller -> the wallets it may pay from (None: any, as in 06)
    # issue 35: a recovery worker, `recover_unfinished()` in the handler's module, finishes payments whose callers
    # left once their lease ended `RECOVERY_GRACE_SECONDS` ago; `cutoff` is how old a payment may be before the
    # provider's key is near its end (PROVIDER_WINDOW - MARGIN): check_handler(..., departed=True) waits to it
    grace = 0.0
    cutoff: float | None = None
    provider_points = True   # each charge the attempt asks is a point of it (`PointedProvider`)
    # Why not, for each event of the catalogue (helpers.catalogue) this kind of subject does not draw: the README's
    # table says it (tools/catalogue_table.py), and tests/test_catalogue_table.py wants a reason for each one
    why_not: dict[str, str] = {
        "provider edge": "drawn only where the handler's module declares the provider's key window "
                         "(`PROVIDER_WINDOW`: 11's handler)",
        "worker": "drawn only where the handler's module has a recovery worker (`recover_unfinished`: 11's)",
    }
    # Names at their limits (issue 44): the longest idempotency key the design declares it takes (MAX_KEY_LENGTH in its
    # module: 09's, Stripe's 255 characters), and the longest wallet ID (MAX_WALLET_LENGTH); None: not declared, and
    # the exhaustive phase sends no name at that limit (only names with the separators keys are built from)
    key_limit: int | None = None
    wallet_limit: int | None = None
    names_at_limits = True   # the exhaustive phase sends these names (and a key with the separators) first
    explore_budget: int | None = None   # at most this many of the exhaustive phase's histories (None: all of them)
    refused_in_keys = ""     # characters the design refuses in a key, by name (07's marker key `producer#id`: `#`,
                             # helpers.validation.KEY_SEPARATOR): the key with separators leaves them out

    def __init__(self, handler: Callable[..., Any], name: str | None = None) -> None:
        self.handler, self.g = handler, getattr(handler, "__globals__", {})
        self.name = name or getattr(handler, "__name__", "handler")
        missing = [n for n in ("db", "wallets", "provider") if n not in self.g]
        if missing:
            raise ValueError(f"check_handler reads {', '.join(missing)} from the handler's module: define them there")
        self.clock, self.wallets = self.g["db"].clock, self.g["wallets"]
        self.reader = self.g["db"].client()           # reads the balances, with no fault injected
        self.lease = float(self.g.get("LEASE_SECONDS", 30))
        self.retention = float(self.g.get("RETENTION_SECONDS", 24 * 3600))
        self.max_amount, self.guards_overdraft = self.g.get("MAX_AMOUNT"), bool(self.g.get("GUARDS_OVERDRAFT"))
        self.attempts = int(self.g.get("ATTEMPTS", self.attempts))
        self.grace, self.cutoff = _recovery_clock(self.g)
        self.key_limit, self.wallet_limit = _name_limits(self.g)
        clients = {id(c): c for c in map(_client, self.g.values()) if c is not None}
        self.lost, self.errors, self.in_progress = _injectors()
        self.clients = list(clients.values())
        self.run = 0
        self.provider: PaymentProvider | None = None

    @contextlib.contextmanager
    def installed(self) -> Iterator[Subject]:
        kept = self.g.get("provider")
        for schedule in (self.lost, self.errors, self.in_progress):
            for client in self.clients:
                schedule.install(client)
        watched_tables = {t.name: [k["AttributeName"] for k in t.key_schema] for t in self.tables()
                          if t.name != self.wallets.name} if self.reader is not None else {}
        self.written = WrittenKeys(watched_tables) if watched_tables else None
        for client in self.clients if self.written is not None else ():
            self.written.install(client)
        try:
            yield self
        finally:
            for schedule in (self.in_progress, self.errors, self.lost):
                schedule.uninstall()
            if self.written is not None:
                self.written.uninstall()
                self.forget_written()
            if "provider" in self.g:
                self.g["provider"] = kept

    def forget_written(self) -> None:
        """Delete what the last history wrote outside the wallets (its records: keys no later history sends), so
        that a scan of a handler's table -- a recovery worker's, a TTL sweep's -- meets this history's items only,
        as in a world of its own, and does not grow with every history. Items the handler's module had before the
        check are never touched."""
        written = getattr(self, "written", None)
        if written is None:
            return
        faithful = answered_by(self.reader)
        for table, keys in written.forget().items():
            for key in keys:
                if faithful is None or not faithful.delete(self.reader.meta.region_name, table, key):
                    self.reader.delete_item(TableName=table, Key=key)

    def begin(self) -> None:
        """A new history: what the last one wrote forgotten, a fresh provider, every wallet back to its balance."""
        self.run += 1
        self.forget_written()
        self.provider = self.g["provider"] = PointedProvider(self.clock)
        self.closed, self.elsewhere = {}, dict.fromkeys(WALLETS, 0)
        for wallet, balance in WALLETS.items():
            if not self.put_in_process({"pk": wallet, "balance": balance}):
                _open_wallet(self.wallets, wallet, balance)

    def put_in_process(self, item: dict[str, Any]) -> bool:
        """As a history begins: `item` put in the wallet table without a request, where nothing can tell the
        difference -- on moto, with no layer on the table's wire but this subject's own fault schedules, which are
        disarmed between requests (they would only count the write, and start counting again when armed) and the
        checker's, idle then. True if it was; False: send the request."""
        client, own = client_of(self.wallets), (self.lost, self.errors, self.in_progress)
        faithful, own = answered_by(client), (*own, *filter(None, [getattr(self, "written", None)]))
        if not item or faithful is None or watched(client, "PutItem", ignoring=own):
            return False
        return faithful.put(client.meta.region_name, self.wallets.name, as_dynamodb_json(item))

    # --- the world changing mid-history (a wallet closed, reopened, paid from by someone else) -----------------

    def change(self, what: str, wallet: str, amount: int = 5) -> int:
        """Change the world around the handler: `close` the wallet (its item deleted, its balance kept aside),
        `reopen` it with that balance, pay `amount` from it `elsewhere` (a write the handler did not make), or
        `topup` it with `amount`. Returns the amount moved (someone else pays at most what the wallet holds)."""
        if what == "close" and wallet not in self.closed:
            self.closed[wallet] = self.balances()[wallet]
            self.wallets.delete_item(Key={"pk": wallet})
        elif what == "reopen" and wallet in self.closed:
            self.reopen(wallet, self.closed.pop(wallet))
        elif what in ("elsewhere", "topup") and wallet not in self.closed:
            # someone else's payment is guarded too: it takes at most what the wallet holds
            paid = min(amount, max(self.balances()[wallet], 0)) if what == "elsewhere" else -amount
            self.wallets.update_item(Key=self.wallet_key_of(wallet), UpdateExpression="SET balance = balance - :paid",
                                     ExpressionAttributeValues={":paid": paid})
            self.elsewhere[wallet] += paid
            return abs(paid)
        return amount

    def wallet_key_of(self, wallet: str) -> dict[str, Any]:
        return {"pk": wallet}

    def tables(self) -> list[Any]:
        """The DynamoDB tables around the handler (its module's), for a TTL sweep."""
        return list({id(v): v for v in self.g.values() if hasattr(v, "key_schema") and hasattr(v, "meta")}.values())

    def reopen(self, wallet: str, balance: int) -> None:
        _open_wallet(self.wallets, wallet, balance)

    def call(self, key: str, payload: dict[str, Any], invocation: str, hook: Callable[[str], None],
             caller: str) -> Any:
        return self.handler(key, payload, invocation, hook=hook, caller=caller)

    def balances(self) -> dict[str, int]:
        keys = [{"pk": {"S": w}} for w in WALLETS]
        got = read_in_process(self.reader, self.wallets.name, keys)
        if got is None:
            got = self.reader.batch_get_item(RequestItems={self.wallets.name: {
                "Keys": keys, "ConsistentRead": True}})["Responses"][self.wallets.name]
        found = {item["pk"]["S"]: int(item["balance"]["N"]) for item in got if "balance" in item}
        return {**getattr(self, "closed", {}), **found}      # a closed wallet: the balance it was closed with

    def money(self) -> dict[str, int]:
        """Money moved so far in this history by the handler: debited per wallet (read back, less what was paid
        from it elsewhere) and, with a provider, charged."""
        balances, elsewhere = self.balances(), getattr(self, "elsewhere", {})
        moved = {f"{w} debited": self.opening[w] - balances[w] - elsewhere.get(w, 0) for w in self.opening}
        if self.provider is not None:
            for w in WALLETS:
                moved[f"{w} charged"] = sum(c.amount for c in self.provider.made if c.wallet_id == w)
        return moved

    def drain(self) -> None:
        """At quiescence: let any background worker finish (a handler with an outbox overrides it)."""

    def recover(self) -> bool:
        """Issue 35: run the handler's recovery worker (`recover_unfinished()` in its module) once, as a scheduler
        would; False when it has none (its departed callers' payments are then as they left them)."""
        worker = self.g.get("recover_unfinished")
        if worker is None:
            return False
        worker()
        return True

    def settle(self) -> None:
        """Issue 35, before a history whose callers may leave: the worker finishes what earlier histories (or checks)
        left unfinished, against a provider of its own, so that each history's worker meets only its own payments."""
        if self.g.get("recover_unfinished") is None:
            return
        self.forget_written()             # the earlier histories' payments: gone, not finished (nothing to scan)
        self.g["provider"] = PaymentProvider(self.clock)
        self.clock.advance(self.lease + self.grace + 1)
        self.recover()

    def words(self, answer: Any) -> str:
        """An answer in a few words, for the history."""
        return in_words(answer)

    def arm(self, fault: Fault | None) -> None:
        """Arm `fault` (a `helpers.history.Fault`) on the subject's clients and provider, for the next request."""
        family, n, kind = (fault.family, fault.n, fault.kind) if fault else (None, 0, None)
        self.lost.restart(at={n} if family == LOST else ())
        self.errors.restart(at={n: kind} if family == ANSWER else {})
        self.in_progress.restart(at={n: kind} if family == STILL_IN_PROGRESS else   # the n-th transaction and its
                                 dict.fromkeys(range(n, n + self.attempts), kind)   # resends: a lasting fault
                                 if family == LASTING else {})
        if self.provider is not None:
            self.provider.fail_next(n if family == PROVIDER_DOWN else 0)
        self.marks = (len(self.errors.answered), len(self.in_progress.answered),
                      self.provider.calls if self.provider is not None else 0)

    def fired(self, fault: Fault | None) -> bool:
        """Whether the armed fault happened during the call (a handler may make fewer writes than it names)."""
        family = fault.family if fault else None
        if family == LOST:
            return bool(self.lost.lost)
        if family == ANSWER:
            return len(self.errors.answered) > self.marks[0]
        if family in (STILL_IN_PROGRESS, LASTING):
            return len(self.in_progress.answered) > self.marks[1]
        return family == PROVIDER_DOWN and self.provider is not None and self.provider.calls > self.marks[2]


class DebitSubject(Subject):
    """A debit function shaped like notebooks 03-05's, `debit(table, wallet, amount, request_id)`, as a handler.

    The request ID is the caller's key; there is no provider, so *once* compares the money debited with the
    amounts answered success. `answer(result, payload)` turns what the debit returned into a response (default:
    any return is success -- "debited" and "already debited" alike); an exception is the caller's answer as it is.

    Its surroundings -- `db` (the clock), `table` (the wallets), and `open_wallet`/`read_balance` if the table
    keeps wallets its own way -- come from the debit's module globals (a notebook's namespace), or are given:
    an exercise checker hands in a fresh table of its own, ``DebitSubject(my_debit, table=t, db=db)``, and
    `key`, the wallet's item key (``{"pk": wallet_id}`` unless given; ``{"pk": ..., "sk": "wallet"}`` in
    notebooks 04, 05 and 08). `opening` sets each wallet's balance as a history begins (a small one lets an
    overdraft guard refuse).
    """

    faults = ("lost", "answer", "in progress")
    explores = True              # a debit's histories are cheap: every placement first (an exercise's is
                                 # `specified.debit_subject`'s, which sends the random histories only)
    interleaves = True           # another request may run before any of its DynamoDB requests (the checker's wire)
    world = False                # the debit functions take the table they are given: no one else changes it
    at_limits = False            # 03-05's debits let a balance go below zero, and take any amount DynamoDB stores
    invocations = False          # a debit has no invocation ID: the histories leave it out
    crashes = False              # nor a hook: no crash can fall inside it
    _WORLD = "the debit takes the table it is given: no one else changes its wallets (`world` False)"
    _PROVIDER = "a debit calls no payment provider: its money is the balance in DynamoDB"
    why_not = {"close": _WORLD, "reopen": _WORLD, "elsewhere": _WORLD, "topup": _WORLD,
               "crash": "a debit calls no `hook(step)`: there is no step for a crash to fall at (a crash between "
                        "its calls is a lost answer, drawn)",
               "provider edge": _PROVIDER, "provider down": _PROVIDER, "provider lost": _PROVIDER,
               "worker": "a debit has no recovery worker: a caller resends"}

    def __init__(self, debit: Callable[..., Any], name: str | None = None,
                 answer: Callable[[Any, dict[str, Any]], Any] | None = None, *, table: Any = None, db: Any = None,
                 key: Callable[[str], dict[str, str]] | None = None, opening: dict[str, int] | None = None) -> None:
        g = getattr(debit, "__globals__", {})
        given = {"db": db, "table": table}
        missing = [n for n in ("db", "table") if given[n] is None and n not in g]
        if missing:
            raise ValueError(f"the debit's module has no {', '.join(missing)}: define them there, or pass them")
        db, table = (given[n] if given[n] is not None else g[n] for n in ("db", "table"))
        self.debit, self.answer, self.handler, self.g = debit, answer or _debited, debit, g
        self.name = name or getattr(debit, "__name__", "debit")
        self.clock, self.wallets, self.reader = db.clock, table, None
        self.key = key if key is not None or given["table"] is None else (lambda wallet: {"pk": wallet})
        self.open_wallet = g.get("open_wallet", _open_wallet) if self.key is None else self._open
        self.read_balance = g.get("read_balance", _read_balance)
        if opening is not None:
            if set(opening) != set(WALLETS):
                raise ValueError(f"opening gives a balance to each of {', '.join(WALLETS)}, got {sorted(opening)}")
            self.opening = dict(opening)
        self.lease, self.retention = 30.0, 24 * 3600.0
        self.lost, self.errors, self.in_progress = _injectors()
        self.clients, self.run, self.provider = [_client(self.wallets)], 0, None
        self.wallet_key: dict[str, Any] | None = None

    def _open(self, table: Any, wallet: str, balance: int) -> None:
        table.put_item(Item={**self.key(wallet), "balance": balance})

    def begin(self) -> None:
        self.run += 1
        for wallet, balance in self.opening.items():
            if not self.put_in_process(self._wallet_item(wallet, balance)):
                self.open_wallet(self.wallets, wallet, balance)

    def _wallet_item(self, wallet: str, balance: int) -> dict[str, Any]:
        """The item `open_wallet` puts, if it is one of the checker's own (a notebook's own function: {})."""
        if self.open_wallet == self._open:
            return {**self.key(wallet), "balance": balance}
        return {"pk": wallet, "balance": balance} if self.open_wallet is _open_wallet else {}

    def balances(self) -> dict[str, int]:
        """Every wallet's balance in one strongly consistent read (not a write: no fault falls on it)."""
        if self.key is None:     # the notebook's own wallet item: (pk) in 03, (pk, sk="wallet") in 04, 05 and 08
            ranged = any(k["KeyType"] == "RANGE" for k in self.wallets.key_schema)
            self.key = (lambda wallet: {"pk": wallet, "sk": "wallet"}) if ranged else (lambda wallet: {"pk": wallet})
        keys, client = [self.key(wallet) for wallet in self.opening], self.wallets.meta.client
        got = read_in_process(client, self.wallets.name, [as_dynamodb_json(key) for key in keys])
        if got is None:
            items = client.batch_get_item(RequestItems={self.wallets.name: {
                "Keys": keys, "ConsistentRead": True}})["Responses"][self.wallets.name]
        else:                                        # DynamoDB JSON: as Python values, as the Table's client
            items = [as_python(item) for item in got]
        return {item["pk"]: int(item["balance"]) for item in items}

    def call(self, key: str, payload: dict[str, Any], invocation: str, hook: Callable[[str], None],
             caller: str) -> Any:
        result = self.debit(self.wallets, payload["wallet"], payload["amount"], f"{caller[-1]}-{key}")
        response = self.answer(result, payload)
        self.returned = (response, result)
        return response

    def words(self, answer: Any) -> str:
        """What the debit itself returned ('already applied'), or the error it raised (its code, for DynamoDB's)."""
        response, result = getattr(self, "returned", (None, None))
        if answer is response and response is not None:
            return repr(result)
        return said(answer)


class HttpSubject(Subject):
    """Notebook 09's endpoint, over real HTTP on 127.0.0.1: `POST /payments` with an `Idempotency-Key`.

    Each caller is an API key (`shop-a`: alice's account, `shop-b`: bob's), and each wallet belongs to one
    account, so a caller paying from another's wallet is refused before any work (404). The server runs in
    this process, so DynamoDB's failure answers and lost answers are injected on its own clients, and the
    provider is the namespace's. Another request may run before any of the route's DynamoDB requests (the checker
    owns the wire of the server's clients, in this process); the route calls no hook, so no crash falls inside it.
    """

    faults = ("lost", "answer", "in progress", "provider down")
    explores = True              # real HTTP, ~30 ms of CPU a history: all ~160 placements from the reader's budget
    interleaves = True           # of 100 on; below it, the first `histories` (helpers.explorer.explore)
    crashes = False              # it never calls hook(step): no crash can fall inside it
    why_not = {"crash": "the route calls no `hook(step)`: no crash can fall inside it (a server that dies "
                        "mid-request is a lost answer on the wire, drawn)",
               **{name: Subject.why_not[name].replace("11's handler", "09's").replace("11's", "09's")
                  for name in ("provider edge", "worker")}}
    CALLERS = {"shop-a": "sk_test_alice", "shop-b": "sk_test_bob"}
    OWNERS = {"alice": "acct_alice", "bob": "acct_bob"}
    wallets_of = {"shop-a": {"alice"}, "shop-b": {"bob"}}     # the model: another's wallet is refused (404)

    def __init__(self, namespace: dict[str, Any], name: str = "09 POST /payments") -> None:
        self.ns, self.g, self.name = namespace, namespace, name
        self.handler = namespace["send"]
        self.clock, self.wallets, self.reader = namespace["db"].clock, namespace["wallets"], namespace["db"].client()
        self.lease = float(namespace["LEASE_SECONDS"])
        self.retention = float(namespace["RETENTION_SECONDS"])
        self.max_amount, self.guards_overdraft = namespace.get("MAX_AMOUNT"), bool(namespace.get("GUARDS_OVERDRAFT"))
        self.grace, self.cutoff = _recovery_clock(namespace)
        self.key_limit, self.wallet_limit = _name_limits(namespace)
        self.lost, self.errors, self.in_progress = _injectors()
        self.clients = list({id(c): c for c in (_client(namespace["wallets"]), _client(namespace["records"]))}.values())
        self.run, self.provider = 0, None

    @contextlib.contextmanager
    def installed(self) -> Iterator[Subject]:
        """As `Subject.installed`, on a pool of fresh connections: a property broken while the server ran a route
        (another request judged at one of its points) ends that route with an error, and uvicorn closes its
        connection after answering -- a connection the client's pool would hand the next check's first request,
        which would get a ReadError and reach no point."""
        pool = getattr(self.ns.get("http_client"), "_transport", None)
        if pool is not None:
            pool.close()          # httpcore: the connections closed, the pool open (the next request connects)
        with super().installed() as subject:
            yield subject

    def begin(self) -> None:
        self.run += 1
        self.forget_written()
        self.provider = self.ns["provider"] = PointedProvider(self.clock)
        self.closed, self.elsewhere = {}, dict.fromkeys(WALLETS, 0)
        for wallet, balance in WALLETS.items():
            self.ns["open_account_wallet"](self.wallets, wallet, balance, owner=self.OWNERS[wallet])

    def reopen(self, wallet: str, balance: int) -> None:
        self.ns["open_account_wallet"](self.wallets, wallet, balance, owner=self.OWNERS[wallet])

    def call(self, key: str, payload: dict[str, Any], invocation: str, hook: Callable[[str], None],
             caller: str) -> Any:
        response = self.ns["send"](self.CALLERS[caller], '"{key}"', payload, key=key)
        named = (*CONTRACT_HEADERS, *REPLAY_MARKS)
        headers = {name: response.headers[name] for name in named if name in response.headers}
        return {"status": response.status_code, "body": response.text, "headers": headers}


class OutboxSubject(Subject):
    """Notebook 10's handler on Postgres, `pay(user_id, key, payload, invocation, hook)`, and its outbox worker.

    The handler debits and enqueues the charge in one transaction and answers 202; the worker charges later.
    So *once* is judged after the worker has drained the outbox (`drain`), and the provider's failures fall on
    the worker's calls: a provider that is down for n calls stays down until the worker has met them.
    """

    faults = ("provider down", "provider lost")   # on the outbox worker's calls: charging refused, or made and lost
    explores = True            # its histories are cheap: every placement first (crashes, clocks, the provider down)
    world = False              # not yet: closing a wallet in Postgres is another schema's question
    store = "Postgres"
    interleaves = False        # a duplicate at a hook would wait on the attempt's own row lock, in its own thread
    provider_points = False    # the charges are the outbox worker's, after the attempt: no point of it
    _REQUEST = ("a duplicate at one of its points would wait on the attempt's own row lock, in a thread of its "
                "own; the checker runs no threads (`interleaves` False)")
    _WORLD = "not yet: closing a wallet in Postgres is another schema's question (`world` False)"
    _DYNAMODB = "it writes to Postgres: no DynamoDB answer to lose or fail"
    why_not = {"copy": _REQUEST, "other payload": _REQUEST, "other caller": _REQUEST, "crossing": _REQUEST,
               "close": _WORLD, "reopen": _WORLD, "elsewhere": _WORLD, "topup": _WORLD,
               "lost": _DYNAMODB, **dict.fromkeys([event.name for event in ANSWERS], _DYNAMODB),
               "provider edge": "10's provider key is the outbox row's: no provider window is declared",
               "worker": "10's outbox worker runs at quiescence, always (`drain`), not as a recovery worker"}

    def __init__(self, namespace: dict[str, Any], name: str = "10 pay") -> None:
        self.ns, self.g, self.handler, self.name = namespace, namespace, namespace["pay"], name
        self.clock = namespace["db"].clock
        self.lease, self.retention = float(namespace["LEASE_SECONDS"]), 24 * 3600.0
        self.run, self.provider = 0, None
        self.lost = self.errors = self.in_progress = None
        self._looking: Any = None     # the checker's own connection, for setting up and reading balances

    @contextlib.contextmanager
    def installed(self) -> Iterator[Subject]:
        kept = self.ns.get("provider")
        self.ns["create_tables"]()                    # the lesson's schema, from nothing
        try:
            yield self
        finally:
            self.ns["provider"] = kept
            if self._looking is not None:
                self._looking.close()
                self._looking = None

    def _look(self, sql: str, params: tuple[Any, ...]) -> Any:
        """`sql` on the checker's own uncounted connection (one for the whole check, not one per look: each new
        connection is a server process). A history that ended this thread's connections (a crash) ended it too:
        then it is opened again, once."""
        import psycopg

        for last in (False, True):
            if self._looking is None or self._looking.closed or self._looking.broken:
                self._looking = self.ns["pg"].admin()
            try:
                return self._looking.execute(sql, params)
            except psycopg.OperationalError:
                if last or not self._looking.broken:
                    raise
        raise AssertionError("unreachable")

    def begin(self) -> None:
        self.run += 1
        self.provider = self.ns["provider"] = PointedProvider(self.clock)     # its charges: no points, lost or not
        (first, balance), *others = WALLETS.items()
        self.ns["open_account"](first, balance)                       # empties the tables: a fresh start
        for wallet, balance in others:
            self._look("INSERT INTO wallets (wallet_id, balance) VALUES (%s, %s)", (wallet, balance))

    def call(self, key: str, payload: dict[str, Any], invocation: str, hook: Callable[[str], None],
             caller: str) -> Any:
        return self.handler(caller, key, payload, invocation, hook)

    def balances(self) -> dict[str, int]:
        """Every wallet's balance, in one SELECT on one connection (read before and after each request)."""
        found = dict(self._look("SELECT wallet_id, balance FROM wallets WHERE wallet_id = ANY(%s)",
                                (list(WALLETS),)).fetchall())
        return {wallet: int(found[wallet]) for wallet in WALLETS}

    def drain(self) -> None:
        for _ in range(self.ns["MAX_ATTEMPTS"] + 1):     # each failed row is due again after its back-off
            self.ns["deliver_all"]()
            self.clock.advance(self.ns["BACKOFF_SECONDS"] * 2 ** self.ns["MAX_ATTEMPTS"])

    def arm(self, fault: Fault | None) -> None:
        if fault is not None and fault.family == PROVIDER_DOWN:
            self.provider.fail_next(fault.n)
        if fault is not None and fault.family == PROVIDER_LOST:
            self.provider.lose_next(fault.n)       # the worker's next n charges are made, and their answers lost

    def fired(self, fault: Fault | None) -> bool:
        return fault is not None     # the provider's failures fall on the worker's later calls


class RecordSubject:
    """A write that is not money -- a status update, a sign-up -- held to the *truthful* and *live* parts.

    A subclass says how to call the reader's function (`call`), which requests a history draws from
    (`requests`: the function's arguments after the table), how the history starts (`begin`), and how to read
    back the item a request writes (`read`) and tell whether it holds that request's write (`holds`). Its
    answers are the function's: a return value in `success` says the write is there; an exception named in
    `refusing` (or `BadInput`) says nothing was written; anything else says nothing -- the caller sends again.
    `describe(request)` and `show(item)` word them for a history. The write's client gets lost responses and
    DynamoDB's failure answers (`faults`), on whichever write a history picks.

    At each answer: a success must find the item holding the write (read back); a refusal must find the item
    as it was. At the end, every request without a final answer is sent again until it gets one (*live*).
    *Once* and *bound* are about money and payloads: not tried here.
    """

    faults = ("lost", "answer")
    _NO_MONEY = "a write that is not money: one request, one write, no payment in flight to interleave with"
    _NO_CLOCK = "no lease, retention window or TTL in a record's design"
    why_not = {"copy": _NO_MONEY, "other payload": _NO_MONEY, "other caller": _NO_MONEY, "crossing": _NO_MONEY,
               "close": "no wallet", "reopen": "no wallet", "elsewhere": "no wallet", "topup": "no wallet",
               "lease before": _NO_CLOCK, "lease after": _NO_CLOCK, "retention after": _NO_CLOCK,
               "ttl sweep": _NO_CLOCK, "provider edge": "no provider", "provider down": "no provider",
               "provider lost": "no provider", "worker": "no recovery worker",
               "crash": "a single write: a crash before it is no request, after it a lost answer (drawn)",
               **{name: "a record's write is one PutItem or UpdateItem, never a transaction" for name in
                  ("answer TransactionInProgress", "answer TransactionInProgress (the original commits)")}}
    writes = 1                         # a fault falls on the request's write
    faults_alike = True                # each fault (and none) drawn alike
    requests: tuple[tuple, ...] = ()
    success: tuple[Any, ...] = ("applied", "already applied")
    refusing: tuple[str, ...] = ()

    def __init__(self, write: Callable[..., Any], table: Any, name: str | None = None) -> None:
        self.write, self.table, self.name = write, table, name or getattr(write, "__name__", "write")
        self.lost, self.errors = LostResponses(), ErrorResponses(kinds=DISTINCT_KINDS, conflict_item=-1)
        self.run = 0

    def begin(self) -> None:
        """A new history: the table as every history starts it."""

    def call(self, request: tuple) -> Any:
        return self.write(self.table, *request)

    def read(self, request: tuple) -> Any:
        raise NotImplementedError

    def holds(self, item: Any, request: tuple) -> bool:
        raise NotImplementedError

    def describe(self, request: tuple) -> str:
        return ", ".join(map(repr, request))

    def show(self, item: Any) -> str:
        return repr(item)

    def kind(self, answer: Any) -> str:
        """The specification's kind of answer: success, refused (nothing written), or unknown."""
        if isinstance(answer, BaseException):
            return classify(answer, self.refusing)
        return SUCCESS if answer in self.success else UNKNOWN

    @contextlib.contextmanager
    def installed(self) -> Iterator[RecordSubject]:
        for schedule in (self.lost, self.errors):
            schedule.install(self.table)
        try:
            yield self
        finally:
            for schedule in (self.errors, self.lost):
                schedule.uninstall()

    def arm(self, fault: Fault | None) -> None:
        family = fault.family if fault else None
        self.lost.restart(at={fault.n} if family == LOST else ())
        self.errors.restart(at={fault.n: fault.kind} if family == ANSWER else {})


class ProviderTimedOut(ConnectionError):
    """The provider charged, and its answer never came back (a timeout after the charge was made)."""


class PointedProvider(PaymentProvider):
    """The subject's provider: each charge request is a point of the attempt in flight (`point`, set by the checker
    while an attempt is sent), and `lose_next()` makes the next charge happen and its answer be lost."""

    point: Callable[[str], None] | None = None
    _lose = 0

    def lose_next(self, n: int = 1) -> None:
        """The next `n` charges (more, if some are still to lose) happen, and their answers are lost."""
        self._lose += n

    def charge(self, wallet_id: str, amount: int, idempotency_key: str) -> Any:
        if self.point is not None:
            self.point("at the provider's charge")
        made = super().charge(wallet_id, amount, idempotency_key)
        if self._lose:
            self._lose -= 1
            raise ProviderTimedOut(f"the provider charged {made.charge_id}, and its answer was lost")
        return made


def said(answer: Any) -> str:
    """What a function answered, in a few words: its return value, or the error it raised (DynamoDB's code)."""
    if isinstance(answer, ClientError):
        error = answer.response.get("Error", {}).get("Code", "ClientError")
        reasons = [r.get("Code", "") for r in answer.response.get("CancellationReasons", [])]
        return error + (f" [{', '.join(reasons)}]" if reasons else "")
    return in_words(answer) if isinstance(answer, BaseException) else repr(answer)[:60]


def read_in_process(client: Any, table: str, keys: list[dict[str, Any]],
                    operation: str = "BatchGetItem") -> list[dict[str, Any]] | None:
    """The items at `keys` (DynamoDB JSON) as a strongly consistent read (`operation`) answers them, read without a
    request where nothing can tell the difference: on moto, with no layer on the client's wire that would see the
    read (a counter, a watcher). A history reads the balances before and after every request it sends -- about half
    its requests, each a full trip through botocore and moto's HTTP emulation; read here, the same items come back
    at a fraction of the cost. None: send the request (another backend, or someone watching the wire)."""
    faithful = answered_by(client)
    if faithful is None or watched(client, operation):
        return None
    return faithful.read(client.meta.region_name, table, keys)


def _recovery_clock(g: dict[str, Any]) -> tuple[float, float | None]:
    """The recovery worker's grace, and the provider's edge (its window less the margin), from a handler's module."""
    cutoff = g["PROVIDER_WINDOW"] - g.get("MARGIN", 0) if "PROVIDER_WINDOW" in g else None
    return float(g.get("RECOVERY_GRACE_SECONDS", 0)), None if cutoff is None else float(cutoff)


def _name_limits(g: dict[str, Any]) -> tuple[int | None, int | None]:
    """The longest idempotency key and wallet ID a handler's module declares it takes (None: not declared)."""
    key, wallet = g.get("MAX_KEY_LENGTH"), g.get("MAX_WALLET_LENGTH")
    return (None if key is None else int(key)), (None if wallet is None else int(wallet))


def _debited(result: Any, payload: dict[str, Any]) -> dict[str, Any]:
    return {"status": 201, "body": json.dumps({"debited": payload["amount"], "from": payload["wallet"]})}


def _client(value: Any) -> Any:
    """The botocore client behind `value` (a client, resource or Table), or None for anything else."""
    try:
        client = client_of(value)
    except TypeError:
        return None
    return client if hasattr(client, "_endpoint") else None


# the kinds of subject, and the lessons each checks: the README's table of what each draws (tools/catalogue_table.py)
KINDS: tuple[tuple[type, str], ...] = ((Subject, "06, 11"), (HttpSubject, "09"), (DebitSubject, "03-05, 07, 08"),
                                       (OutboxSubject, "10"), (RecordSubject, "01, 02"))
