"""The write path: remember, edit, merge, trash; every field of every path checked alike.

`remember` cleans and checks a memory's fields (the same checks as an import line), counts a
known text once more, holds back or merges a near-duplicate, and stores a new memory with its
vectors and labels in one write transaction. What changed is appended to the markdown mirror
(`knowledge.append_to_mirror`) when one is set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import PurePath

import numpy as np

from app.core import origin as origins
from app.core import superseding
from app.core.errors import InputError, MnemoError, NotFoundError
from app.core.indexer import Indexer
from app.core.memory import (
    CONFIDENCES,
    Memory,
    clean_text,
    content_hash,
    guard_memory,
    guard_secrets,
    join_statements,
    made_from,
    public_dict,
    split_list,
    title_from,
    utc_stamp,
)
from app.core.model.embedder import Embedded
from app.core.origin import Origin
from app.core.settings import Settings
from app.core.storage import fts
from app.core.storage.db import Database, now
from app.core.storage.inbox import SAID_CHARS, SUPERSEDES, Candidate, Inbox
from app.core.storage.knowledge import append_to_mirror
from app.core.storage.store import Store

# Live memories close to some vectors, closest first: (memory, cosine).
Neighbours = Callable[[np.ndarray], list[tuple[Memory, float]]]


CAPTURE_CATEGORIES = {"fixed-command": "patterns", "always-never": "heuristics"}


def says_nothing_new(text: str, known: str) -> bool:
    """Whether every word of `text` is in `known` (numbers and names included): a
    near-duplicate by meaning that says something else ("web-02 is 10.0.0.12" beside
    "web-01 is 10.0.0.11") is not the same statement."""
    return set(fts.words(text.lower())) <= set(fts.words(known.lower()))


def candidate_origin(candidate: Candidate, reviewed: bool) -> Origin:
    """Where a candidate of the inbox came from: a capture from its agent's session, or an
    import of the agent's file it was read in (`mnemo agents import`); when it was said."""
    if candidate.source:
        found = origins.imported(PurePath(candidate.source).name)
        found = replace(found, session=origins.label(candidate.session), reviewed=reviewed)
    else:
        found = origins.capture(candidate.agent, candidate.session, reviewed)
    at = utc_stamp(candidate.said_at or "") or utc_stamp(candidate.created_at or "")
    return found.stamped(at or "")


class Remembered(StrEnum):
    """What `remember` did (its value is the `status` of `remember --json` and MCP)."""

    STORED = "stored"  # a new memory
    OBSERVED = "observed"  # the same text again: counted once more
    RESTORED = "restored"  # the same text was in the trash: back, counted once more
    MERGED = "merged"  # merged with its near-duplicate into a new memory (`merge=True`)
    SIMILAR = "similar"  # held back: a near-duplicate exists (neither `force` nor `merge`)
    SUPERSEDED = "superseded"  # an accepted proposal: the older memory is a version of it


@dataclass
class RememberResult:
    """What `remember` did: stored, observed again, merged, or held back as a near-duplicate."""

    status: Remembered
    memory: Memory
    similarity: float | None = None  # to the near-duplicate, for similar / merged
    related: list[tuple[Memory, float]] = field(default_factory=list)
    notice: str | None = None
    similar: Memory | None = None  # the near-duplicate a forced store was linked to
    supersedes: Memory | None = None  # an older memory it restates with another value
    proposal: str | None = None  # the inbox's proposal that it supersedes that one

    def to_dict(self) -> dict:
        """The JSON shape of `remember --json` and MCP `store_memory` (README: "JSON
        output"): the memory's public shape with what remembering it found around it."""
        out = {
            "status": self.status.value,
            **public_dict(self.memory),
            "similarity": self.similarity,
            "related": [
                {"id": m.id, "title": m.display_title, "similarity": round(s, 4)}
                for m, s in self.related
            ],
        }
        if self.similar is not None:
            out["similar"] = {
                "id": self.similar.id,
                "title": self.similar.display_title,
                "similarity": round(self.similarity or 0.0, 4),
            }
        if self.supersedes is not None:
            out["supersedes"] = {
                "id": self.supersedes.id,
                "title": self.supersedes.display_title,
                "was": superseding.was(self.supersedes.text, self.memory.text),
                "proposal": self.proposal,
            }
        if self.notice:
            out["notice"] = self.notice
        return out


def checked_memory(
    text: str,
    title: str | None,
    category: str | None,
    tags: str | list[str] | None,
    project: str | None,
    reasoning: str | None,
    source: str,
    references: str | list[str] | None,
    confidence: str,
    thread: str | None,
    *,
    secrets: str,
) -> tuple[Memory, str | None]:
    """A new memory from `remember`'s arguments, with the same checks as an import line
    (types, lengths, cleaning) and the secret guard on every field; and the guard's notice
    (what it redacted), if any. InputError or SecretError for what cannot be stored."""
    text = clean_text(text)
    if not text:
        raise InputError("nothing to remember: the text is empty")
    if confidence not in CONFIDENCES:
        raise InputError(f"confidence must be one of {', '.join(CONFIDENCES)}")
    fields = Memory.from_dict(
        {
            "text": text,
            "title": title or "",
            "reasoning": reasoning or "",
            "category": (category or "note").strip() or "note",
            "tags": split_list(tags),
            "references": split_list(references),
            "source": source or "manual",
            "source_project": (project or "").strip() or None,
            "confidence": confidence,
            "thread": (thread or "").strip() or None,
        }
    )
    memory = Memory(
        id="",
        text=fields.text,
        title=fields.title or title_from(fields.text),
        reasoning=fields.reasoning,
        category=fields.category,
        tags=fields.tags,
        references=fields.references,
        source=fields.source,
        source_project=fields.source_project,
        confidence=confidence,
        thread=fields.thread,
    )
    # A title made from the text (none given, or the one it makes: Remember clipboard, an
    # agent naming a memory by its first line) is made again from the redacted text: one
    # name for the secret, no piece of it where the title was cut
    derived = not fields.title or made_from(fields.title, fields.text)
    notice = guard_memory(memory, secrets)  # every field, on every path
    if derived:
        memory.title = title_from(memory.text)
    return memory, notice


class Writer:
    """Every change to memories: over the store, with the indexer for vectors and labels,
    `neighbours` for near-duplicates and the settings' thresholds and mirror folder."""

    def __init__(
        self,
        db: Database,
        store: Store,
        indexer: Indexer,
        settings: Settings,
        neighbours: Neighbours,
        model_problem: Callable[[], str | None],
        inbox: Inbox,
    ):
        self._db = db
        self._store = store
        self._inbox = inbox
        self._indexer = indexer
        self._settings = settings
        self._neighbours = neighbours
        self._model_problem = model_problem

    def remember(
        self,
        text: str,
        title: str | None = None,
        category: str | None = None,
        tags: str | list[str] | None = None,
        project: str | None = None,
        reasoning: str | None = None,
        source: str = "manual",
        references: str | list[str] | None = None,
        confidence: str = "medium",
        merge: bool = False,
        force: bool = False,
        embed: bool = True,
        secrets: str = "refuse",
        link_similar: bool = False,
        thread: str | None = None,
        origin: Origin | None = None,
    ) -> RememberResult:
        """Store a memory, or count it again if known, or hold it back as a near-duplicate.

        `force` stores it anyway (with `link_similar`, its references gain `mnemo:ID` of
        the near-duplicate); `merge` merges it with the near-duplicate into a new memory
        that keeps every statement of both.

        `secrets`: what to do when the text holds a key, token or password: "refuse"
        (SecretError), "redact" (store it with `[REDACTED:kind]` in their place) or "allow".

        `origin`: who wrote it, as the front end knows it (a person at the CLI, the MCP
        client...); none of the writer's fields can set it. A text known already keeps the
        origins it has; a merge keeps every origin of both.

        A text that says what an older memory says with another value (`superseding`) is
        stored, never held back as its near-duplicate, and proposed in the inbox as
        superseding it (`supersedes` in the result): a person decides.
        """
        memory, notice = checked_memory(
            text,
            title,
            category,
            tags,
            project,
            reasoning,
            source,
            references,
            confidence,
            thread,
            secrets=secrets,
        )
        memory.created_at = now()
        memory.origins = [(origin or Origin(origins.PERSON)).stamped(memory.created_at)]
        # Known already? Read without a write lock; counted (one write) only if it is
        known_now = self._store.find_by_hash(content_hash(memory.text), memory.thread)
        if known_now is not None and (known := self._observe_if_known(memory)) is not None:
            return known
        embedded = self._indexer.embed(memory) if embed else None
        if embedded is None and embed:
            later = f"stored without embedding ({self._model_problem()}); "
            later += "`mnemo backfill` adds it later"
            notice = f"{notice}; {later}" if notice else later
        duplicate, related, near = self._near_duplicate(memory, embedded)
        older = None if merge else self._restated(memory, near)
        if duplicate is not None and not force and older is None:
            target, score = duplicate
            if not merge:
                return RememberResult(Remembered.SIMILAR, target, score, related)
            merged = self._merge([target], memory)
            return RememberResult(Remembered.MERGED, merged, score, related)
        similar = duplicate[0] if duplicate is not None else None
        if similar is not None and link_similar:
            memory.references = split_list([*memory.references, f"mnemo:{similar.id}"])
        if embedded is not None:  # labels: before the lock
            memory.keywords = self._indexer.labels(memory, *embedded)
        # One write transaction: the check again (another process may have stored it
        # meanwhile), the memory, its labels and its vectors, all or nothing.
        with self._db.write():
            if (known := self._observe_if_known(memory)) is not None:
                return known
            stored = self._store.insert(memory)
            self._indexer.save(stored, embedded)
        if problem := self._mirror([stored]):
            notice = f"{notice}; {problem}" if notice else problem
        score = duplicate[1] if duplicate is not None else None
        result = RememberResult(Remembered.STORED, stored, score, related, notice, similar)
        if older is not None:
            self._propose_superseding(result, older, memory.origins[0])
        return result

    # ---- the capture inbox ----------------------------------------------------------
    def capture(self, candidate: Candidate, inbox: Inbox, auto: bool = False) -> tuple[str, str]:
        """A statement an agent's hook found: checked like every write (a secret is refused,
        SecretError: nothing is kept, not even in the inbox; one in the prompt around it is
        redacted from the excerpt kept for review). The same words again, or a
        near-duplicate that says nothing the memory does not, count as one more observation
        of that memory; else it waits in the inbox (with the near-duplicate named), or with
        `auto` is stored, unless the user rejected these words before. What happened
        ("observed", "stored", "proposed", "again", "rejected") and the memory's or the
        candidate's id."""
        memory, _ = checked_memory(
            candidate.text, None, None, None, candidate.project, None, "hook", None,
            "medium", None, secrets="refuse",
        )  # fmt: skip
        excerpt = {"text": candidate.said}  # (a text field: the guard reads those)
        guard_secrets(excerpt, "redact")
        candidate.said, candidate.text = excerpt["text"], memory.text
        if self._store.find_by_hash(content_hash(memory.text), None) is not None:
            known = self._observe_if_known(memory)
            if known is not None:
                return "observed", known.memory.id
        duplicate, _, _ = self._near_duplicate(memory, self._indexer.embed(memory))
        if duplicate is not None and says_nothing_new(memory.text, duplicate[0].text):
            with self._db.write():
                observed = self._store.observe(duplicate[0].id)
            self._mirror([observed])
            return "observed", observed.id
        if inbox.rejected(candidate.text):
            return "rejected", ""
        candidate.similar = duplicate[0].id if duplicate is not None else None
        if auto:
            return "stored", self.accept(candidate, reviewed=False).memory.id
        return inbox.propose(candidate), candidate.id

    def accept_all(
        self, found: list[Candidate], text: str | None, failed: list[str] | None
    ) -> list[RememberResult]:
        """Accept candidates (`Engine.accept`), each leaving the inbox once accepted; with
        `failed`, one that cannot be (a stale proposal) waits on, said there."""
        if text is not None and len(found) != 1:
            raise InputError("an edited text is for one candidate at a time")
        done = []
        for candidate in found:
            try:
                done.append(self.accept(candidate, text))
            except MnemoError as exc:
                if failed is None:
                    raise
                failed.append(f"{candidate.id}: {exc}")
                continue
            self._inbox.remove([candidate.id])
        return done

    def accept(
        self, candidate: Candidate, text: str | None = None, reviewed: bool = True
    ) -> RememberResult:
        """A candidate made a memory (its text as the user edited it, if given): tagged
        `captured` and with its rule, its keywords as tags. A near-duplicate that says
        nothing new counts as one more observation of that memory; one that does (another
        server, another number) is stored beside it, linked (`mnemo:ID`). Its origin: the
        agent whose session it was captured from (or the agent's file it was imported
        from), when it was said, and whether a person accepted it (`reviewed`)."""
        if candidate.rule == SUPERSEDES:
            if text is not None:
                raise InputError("a proposal to supersede is accepted as it is; edit it after")
            return self._supersede(candidate)
        text = candidate.text if text is None else text
        fields = {
            "category": CAPTURE_CATEGORIES.get(candidate.rule, "note"),
            "tags": ["captured", candidate.rule, *candidate.keywords],
            "project": candidate.project,
            "source": f"hook:{candidate.agent}" if candidate.agent else "hook",
            "origin": candidate_origin(candidate, reviewed),
        }
        result = self.remember(text, **fields)
        if result.status != Remembered.SIMILAR:
            return result
        if says_nothing_new(clean_text(text), result.memory.text):
            with self._db.write():
                observed = self._store.observe(result.memory.id)
            self._mirror([observed])
            return RememberResult(Remembered.OBSERVED, observed)
        return self.remember(text, force=True, link_similar=True, **fields)

    def _supersede(self, proposal: Candidate) -> RememberResult:
        """A person accepted that a memory supersedes an older one: the older one's words
        become a version of it (`mnemo history`), with their origins and the time they
        were replaced, and the older one goes to the trash (a pin it had moves over)."""
        with self._db.write():
            newer = self._store.find_by_hash(content_hash(proposal.text), None)
            try:
                older = self._store.get(proposal.similar or "")
            except NotFoundError:
                raise InputError(
                    f"{proposal.similar} was deleted for good since: nothing done "
                    "(reject the proposal)"
                ) from None
            if newer is None or newer.deleted_at:
                raise InputError(
                    "the memory that would supersede it was changed or moved to the trash "
                    "since: nothing done (reject the proposal)"
                )
            if older.deleted_at and older.merged_into:
                raise InputError(
                    f"{older.id} was merged into {older.merged_into} since: nothing done "
                    "(reject the proposal)"
                )
            if older.deleted_at:
                raise InputError(f"{older.id} is in the trash: restore it first, or reject")
            if older.text[:SAID_CHARS] != proposal.said:
                raise InputError(
                    f"{older.id} was edited since it was proposed: nothing done (it may say "
                    "another fact now; reject the proposal)"
                )
            by = origins.person("inbox").stamped(now())
            # its own history goes along (a chain: A's words outlive B emptied from the trash)
            for kept in reversed(self._store.versions.of(older.id)):
                self._store.versions.add_carried(replace(kept, memory_id=newer.id))
            self._store.versions.add(newer.id, older, why="superseded", by=by, at=by.at)
            self._store.set_deleted([older.id], True)
            if older.pinned and not newer.pinned:
                newer = self._store.update(newer.id, pinned=True)
        self._mirror([newer, self._store.get(older.id)])
        return RememberResult(Remembered.SUPERSEDED, newer, supersedes=older)

    def _near_duplicate(
        self, memory: Memory, embedded: Embedded | None
    ) -> tuple[tuple[Memory, float] | None, list[tuple[Memory, float]], list[tuple[Memory, float]]]:
        """The closest memory at or above the duplicate threshold (or None), the related
        ones below it, and all of them, closest first; a turn of a conversation is compared
        with its own thread only."""
        if embedded is None:
            return None, [], []
        neighbours = self._neighbours(embedded[0])
        if memory.thread is not None:  # a turn of a conversation duplicates none elsewhere
            neighbours = [(m, sim) for m, sim in neighbours if m.thread == memory.thread]
        threshold = self._settings["duplicate_threshold"]
        duplicate = next(((m, s) for m, s in neighbours if s >= threshold), None)
        return duplicate, [(m, s) for m, s in neighbours if s < threshold], neighbours

    def _restated(self, memory: Memory, near: list[tuple[Memory, float]]) -> Memory | None:
        """The closest memory (of those `near` it) that `memory` says again with another
        value, but one these words were refused as superseding (or a conversation's turn)."""
        if memory.thread is not None:
            return None
        for other, _ in near:
            if (
                other.thread is None
                and superseding.restates(memory.text, other.text)
                and not self._inbox.rejected(memory.text, other.id)  # (refused: the next)
            ):
                return other
        return None

    def _propose_superseding(self, result: RememberResult, older: Memory, by: Origin) -> None:
        """Put "`result.memory` supersedes `older`" in the inbox, both texts side by side."""
        newer = result.memory
        proposal = Candidate(
            newer.text,
            SUPERSEDES,
            agent=by.name if by.kind in (origins.AGENT, origins.CAPTURE) else "",
            project=newer.source_project,
            session=by.session or "",
            said=older.text,
            similar=older.id,
        )
        if self._inbox.propose(proposal) == "rejected":
            return
        was = superseding.was(older.text, newer.text)
        result.supersedes, result.proposal = older, proposal.id
        now = superseding.was(newer.text, older.text)  # (the new values)
        said = f"{now or '…'} where {older.id} says {was}" if was else f"the opposite of {older.id}"
        told = f"it says {said} ({older.display_title}): proposed in the inbox as superseding it"
        result.notice = f"{result.notice}; {told}" if result.notice else told

    def _observe_if_known(self, memory: Memory) -> RememberResult | None:
        """Count one more observation of a memory with the same text, if there is one."""
        with self._db.write():
            existing = self._store.find_by_hash(content_hash(memory.text), memory.thread)
            if existing is None:
                return None
            observed = self._store.observe(existing.id)
            new_tags = split_list(observed.tags + memory.tags)
            if new_tags != observed.tags:
                observed = self._store.update(observed.id, tags=new_tags)
        self._mirror([observed])
        how = Remembered.RESTORED if existing.deleted_at else Remembered.OBSERVED
        return RememberResult(how, observed)

    def _merge(self, sources: list[Memory], incoming: Memory | None = None) -> Memory:
        """A new memory holding every distinct statement of `sources` (and of `incoming`,
        a text not stored yet: stored too, as a source); the sources go to the trash with
        `merged_into` set, as they were, so `unmerge` brings back the exact originals, the
        text that arrived on its own among them."""
        with self._db.write():
            # Re-read under the write lock so concurrent merges never lose a count.
            current = [self._store.get(m.id) for m in sources]
            if incoming is not None:  # a near-duplicate merged away meanwhile: its result
                current = [self._merge_result(m) for m in current]
            if any(m.deleted_at for m in current):
                raise InputError("a memory to merge is in the trash; restore it first")
            group = current + ([incoming] if incoming is not None else [])
            first = group[0]
            text = join_statements([m.text for m in group])
            merged = Memory(
                id="",
                text=text,
                title=first.title if not made_from(first.title, first.text) else title_from(text),
                reasoning=join_statements([m.reasoning for m in group if m.reasoning]),
                category=first.category,
                tags=split_list([t for m in group for t in m.tags]),
                references=split_list([r for m in group for r in m.references]),
                source=first.source,
                origins=origins.joined([m.origins for m in group]),
                source_project=next((m.source_project for m in group if m.source_project), None),
                confidence=CONFIDENCES[max(CONFIDENCES.index(m.confidence) for m in group)],
                observation_count=sum(m.observation_count for m in group),
                recall_count=sum(m.recall_count for m in current),
                last_recalled_at=max((m.last_recalled_at or "" for m in current), default="")
                or None,
                created_at=min(m.created_at for m in current),
                pinned=any(m.pinned for m in group),
                # one conversation's turns merged stay in it; turns of two are in neither
                thread=first.thread if len({m.thread for m in group}) == 1 else None,
            )
            merged.updated_at = now()
            # (an unmerge that brought back only the memory already stored left the new
            # text in the trash alone, inside the merged memory)
            current += [self._store.insert(incoming)] if incoming is not None else []
            stored = self._store.insert(merged)
            self._store.mark_merged([m.id for m in current], stored.id)
        self._indexer.save(stored, self._indexer.embed(stored))
        self._mirror([stored, *(self._store.get(m.id) for m in current)])
        return stored

    def _merge_result(self, memory: Memory) -> Memory:
        """The live memory a trashed merge source ended up in (itself when live)."""
        for _ in range(20):
            if not memory.deleted_at or not memory.merged_into:
                return memory
            memory = self._store.get(memory.merged_into)
        return memory

    def merge(self, ids: list[str]) -> Memory:
        """Merge memories into a new one that keeps every distinct statement; the sources
        go to the trash linked to it (`unmerge` undoes it)."""
        if len(set(ids)) < 2:
            raise InputError("merging needs at least two different memories")
        memories = [self._store.get(i, include_deleted=False) for i in dict.fromkeys(ids)]
        if len({m.id for m in memories}) < 2:
            raise InputError("merging needs at least two different memories")
        return self._merge(memories)

    def unmerge(self, merged_id: str) -> list[str]:
        """Undo a merge: its sources come back exactly as they were, the result goes to the
        trash. Returns the restored ids."""
        merged = self._store.get(merged_id)
        with self._db.write():
            sources = self._store.merged_sources(merged.id)
            if not sources:
                raise InputError(f"{merged.id} is not the result of a merge")
            self._store.unmark_merged(sources)
            self._store.set_deleted([merged.id], True)
        self._mirror([self._store.get(i) for i in (*sources, merged.id)])
        return sources

    def edit(
        self,
        memory_id: str,
        secrets: str = "refuse",
        embed: bool = True,
        expect: dict | None = None,
        origin: Origin | None = None,
        **changes,
    ) -> Memory:
        """Change a memory's fields (only those given); a content change is re-embedded at
        once if possible (`embed` = False leaves it to the backfill, as the desktop app does
        for a long text), and keeps the words it replaced as a version (`origin`: who edits,
        as the front end knows; it joins the memory's origins). Every changed field is
        checked for secrets like `remember`. `expect` holds fields as the caller read them:
        if another process changed one since, ConflictError and nothing is written (an
        editor never overwrites a change unseen)."""
        changes = {k: v for k, v in changes.items() if v is not None}  # None: not given
        for key in ("title", "text", "reasoning"):
            if changes.get(key) is not None:
                changes[key] = clean_text(changes[key], key)
        if "text" in changes and not changes["text"]:
            raise InputError("a memory's text cannot be empty")
        if changes.get("confidence") is not None and changes["confidence"] not in CONFIDENCES:
            raise InputError(f"confidence must be one of {', '.join(CONFIDENCES)}")
        for key in ("tags", "references", "keywords"):
            if key in changes and changes[key] is not None:
                changes[key] = split_list(changes[key])
        changes = {k: v for k, v in changes.items() if v is not None}
        for key in ("category", "source_project"):
            if isinstance(changes.get(key), str):
                changes[key] = clean_text(changes[key], key)[:500]
        if "thread" in changes:  # "" takes a memory out of its thread
            thread = clean_text(str(changes["thread"]), "thread")
            if len(thread) > 500:
                raise InputError(f"thread has {len(thread):,} characters; the limit is 500")
            changes["thread"] = thread or None
        derived = "text" in changes and made_from(changes.get("title"), changes["text"])
        guard_secrets(changes, secrets)
        if derived:  # made again from the redacted text (as `checked_memory`)
            changes["title"] = title_from(changes["text"])
        elif "text" in changes and "title" not in changes:
            current = self._store.get(memory_id)
            if made_from(current.title, current.text):  # derived, so it follows the text
                changes["title"] = title_from(changes["text"])
        memory = self._store.update(memory_id, expect=expect, origin=origin, **changes)
        return self._edited(memory, embed)

    def _edited(self, memory: Memory, embed: bool) -> Memory:
        """After an edit: new words embedded now (`embed`) or by the backfill; the mirror."""
        if embed and self._indexer.lacks_vectors(memory):
            self._indexer.save(memory, self._indexer.embed(memory))
        self._mirror([memory])
        return memory

    def restore_version(
        self, memory_id: str, seq: int, origin: Origin | None = None, embed: bool = True
    ) -> Memory:
        """Make a memory say again what one of its versions (`seq`) said: its title, text and
        reasoning, with the origins of those words; what it said until now is kept as a
        version (replaced by `origin`, why 'restore'), so restoring that undoes it. Refused
        (InputError, nothing changed) for a memory in the trash, a version of another
        memory, or words it says already."""
        memory = self._store.get(memory_id)
        if memory.deleted_at:
            raise InputError(
                f"memory {memory.id} is in the trash: restore it first (mnemo restore {memory.id})"
            )
        version = next((v for v in self._store.versions.of(memory.id) if v.seq == seq), None)
        if version is None:
            raise InputError(f"memory {memory.id} has no such version ({seq})")
        if version.same_words(memory):
            raise InputError(
                f"memory {memory.id} already says what version {version.number} says: "
                "nothing to restore"
            )
        words = {"title": version.title, "text": version.text, "reasoning": version.reasoning}
        memory = self._store.update(
            memory.id,
            expect={"deleted_at": None},  # (trashed meanwhile: TrashedError)
            origin=origin,
            why="restore",
            words_of=version.origins or None,
            **words,
        )
        return self._edited(memory, embed)

    def forget(self, ids: list[str]) -> list[str]:
        """Move memories to the trash."""
        changed = self._store.set_deleted(ids, True)
        self._mirror([self._store.get(i) for i in changed])
        return changed

    def restore(self, ids: list[str]) -> list[str]:
        """Bring memories back from the trash."""
        changed = self._store.set_deleted(ids, False)
        self._mirror([self._store.get(i) for i in changed])
        return changed

    def purge(self, ids: list[str]) -> int:
        """Delete memories for good, with their vectors (no undo)."""
        return self._store.purge(ids)

    def empty_trash(self) -> int:
        """Delete every memory in the trash for good (no undo); how many."""
        return self._store.purge(self._store.trashed_ids())

    def _mirror(self, memories: list[Memory]) -> str | None:
        """Append changed memories to the markdown mirror, if one is set (never fails a
        write; why it could not be written, to say). Never for an encrypted database: the
        mirror is plain text (ADR 0014)."""
        if self._db.encrypted:
            return None
        return append_to_mirror(self._settings["mirror_dir"], memories)
