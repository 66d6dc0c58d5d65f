"""`mnemo hook`: memory at every prompt through a warm helper, and no process left behind
(issue 25, item 2). Real subprocesses, the real model, each agent's documented event JSON."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, wait

MNEMO = Path(sys.executable).parent / "mnemo"
DEPLOY = "We deploy the billing service with Helm on Fridays; roll back with helm rollback"
LASAGNE = "Grandma's lasagne needs three layers of béchamel"


def _env(**more: str) -> dict[str, str]:
    return {**os.environ, **more}


def _hook(event: str, agent: str, data: dict, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(MNEMO), "hook", event, "--agent", agent],
        input=json.dumps(data),
        env=_env(**env),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _helper_pid() -> int | None:
    done = subprocess.run(
        [str(MNEMO), "hook", "status"], capture_output=True, text=True, timeout=60
    )
    words = done.stdout.replace(")", " ").split()
    return int(words[words.index("(pid") + 1]) if "(pid" in words else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat")
    return not (state.exists() and state.read_text().split(") ")[1].startswith("Z"))


def _helpers_of(home: Path) -> list[int]:
    """Every `hook serve` process running for this MNEMO_HOME."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        ours = b"serve" in cmdline and b"hook" in cmdline
        if ours and f"MNEMO_HOME={home}".encode() in environ and _alive(int(proc.name)):
            found.append(int(proc.name))
    return found


@pytest.fixture
def memories(mnemo_home):
    for text in (DEPLOY, LASAGNE):
        done = subprocess.run(
            [str(MNEMO), "remember", text], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
    yield mnemo_home
    subprocess.run([str(MNEMO), "hook", "stop"], capture_output=True, timeout=60)
    wait(lambda: not _helpers_of(mnemo_home), 20, "no helper left running")


def _prompt(text: str, session: str = "s1") -> dict:
    # Claude Code's documented UserPromptSubmit input
    return {
        "session_id": session,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": str(REPO),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": text,
    }


def test_a_prompt_gets_the_memories_about_it_through_one_warm_helper(memories):
    # GIVEN no helper runs yet; the session's start starts one (a prompt gets 2 s at most,
    # which a helper starting on a busy machine may not make: test_a_cold_prompt_…)
    assert _helper_pid() is None
    start = {**_prompt(""), "hook_event_name": "SessionStart", "source": "startup"}
    assert _hook("session-start", "claude", start).returncode == 0
    # WHEN Claude Code's prompt hook runs
    first = _hook("prompt", "claude", _prompt("how do we deploy the billing service?"))
    # THEN the memory about it is injected as plain text, and nothing unrelated
    assert first.returncode == 0, first.stderr
    assert "helm rollback" in first.stdout and "lasagne" not in first.stdout, first.stdout
    assert len(first.stdout) < 3_000  # a few memories, far under Claude Code's 10,000
    pid = _helper_pid()
    assert pid is not None and _alive(pid)
    # AND the next prompts are served by the same helper, not a new process each
    again = _hook("prompt", "claude", _prompt("how do we deploy the billing service?", "s2"))
    assert "helm rollback" in again.stdout and _helper_pid() == pid
    # AND within one session a memory is not injected twice
    repeat = _hook("prompt", "claude", _prompt("deploying billing: the steps again?", "s2"))
    assert repeat.returncode == 0 and repeat.stdout == "", repeat.stdout
    # AND a prompt about nothing stored gets nothing at all
    unrelated = _hook("prompt", "claude", _prompt("what is the boiling point of tungsten?", "s3"))
    assert unrelated.returncode == 0 and unrelated.stdout == "", unrelated.stdout
    assert _helpers_of(memories) == [pid]


def test_gemini_gets_json_for_its_before_agent_and_session_start_events(memories):
    event = {
        "session_id": "g1",
        "transcript_path": "/tmp/t.json",
        "cwd": str(REPO),
        "hook_event_name": "BeforeAgent",
        "timestamp": "2026-11-26T08:00:00Z",
        "prompt": "remind me how billing gets deployed",
    }
    done = _hook("prompt", "gemini", event)
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "BeforeAgent" and "helm rollback" in out["additionalContext"]
    nothing = json.loads(_hook("prompt", "gemini", {**event, "prompt": "tungsten?"}).stdout)
    assert nothing == {}  # JSON only, even when there is nothing to add
    start = {**event, "hook_event_name": "SessionStart", "source": "startup"}
    started = json.loads(_hook("session-start", "gemini", start).stdout)["hookSpecificOutput"]
    assert started["hookEventName"] == "SessionStart"
    assert started["additionalContext"].startswith("## Memories from earlier sessions")


def test_the_helper_exits_by_itself_when_idle(memories):
    # WHEN a hook starts the helper, with the idle limit at two seconds
    done = _hook("prompt", "claude", _prompt("billing deploy?"), MNEMO_HOOK_IDLE_S="2")
    assert done.returncode == 0, done.stderr
    pids = _helpers_of(memories)
    assert len(pids) == 1
    # THEN it exits by itself, its socket and lock let go, nothing left (not even a zombie)
    wait(lambda: not _alive(pids[0]), 60, "the idle helper to exit")
    assert _helper_pid() is None
    from app.agents import hook

    assert not os.path.exists(hook.socket_path())


def test_hooks_started_together_share_one_helper(memories):
    # WHEN four sessions start at once with no helper running
    procs = [
        subprocess.Popen(
            [str(MNEMO), "hook", "session-start", "--agent", "claude"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        for _ in range(4)
    ]
    start = {"hook_event_name": "SessionStart", "source": "startup", "cwd": str(memories)}
    outs = [p.communicate(json.dumps({**start, "session_id": f"c{n}"}), 120)[0]
            for n, p in enumerate(procs)]  # fmt: skip
    # THEN each got its memories, and one helper serves them all
    assert all("helm rollback" in out for out in outs), outs
    assert len(_helpers_of(memories)) == 1


def test_a_helper_of_other_code_steps_down_for_the_new_one(memories):
    from app.agents import hook

    first = _hook("prompt", "claude", _prompt("billing deploy?"))
    assert first.returncode == 0
    old = _helper_pid()
    # WHEN a hook of another version asks (an upgrade while the helper ran)
    status, out = hook.ask(
        "prompt", "claude", json.dumps(_prompt("billing deploy?", "s8")).encode()
    )
    assert status == "ok" and b"helm rollback" in out
    hook_version, hook.VERSION = hook.VERSION, "0.0.0:1"
    try:
        assert hook.ask("prompt", "claude", json.dumps(_prompt("billing?")).encode()) == (
            "restart",
            b"",
        )
    finally:
        hook.VERSION = hook_version
    # THEN the old helper exits, and the next hook starts a new one and is answered
    wait(lambda: not _alive(old), 30, "the old helper to step down")
    start = {**_prompt("", "s9"), "hook_event_name": "SessionStart", "source": "startup"}
    assert _hook("session-start", "claude", start).returncode == 0
    after = _hook("prompt", "claude", _prompt("how is billing deployed?", "s9"))
    assert "helm rollback" in after.stdout
    assert _helper_pid() not in (None, old)


def test_a_hook_with_bad_input_never_fails_the_agent(memories):
    for data in ("not json", "[1, 2]", '{"prompt": 42}', ""):
        done = subprocess.run(
            [str(MNEMO), "hook", "prompt", "--agent", "claude"],
            input=data, capture_output=True, text=True, timeout=120, cwd=REPO,
        )  # fmt: skip
        assert done.returncode == 0 and done.stdout == "", (data, done.stdout, done.stderr)
    wrong = subprocess.run(
        [str(MNEMO), "hook", "prompt", "--agent", "nobody"], input="{}",
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert wrong.returncode == 2 and "usage: mnemo hook" in wrong.stderr


def test_the_helper_logs_no_prompt(memories):
    secret_words = "purple elephant migration plan for billing"
    _hook("prompt", "claude", _prompt(secret_words))
    subprocess.run([str(MNEMO), "hook", "stop"], capture_output=True, timeout=60)
    logs = "".join(p.read_text() for p in (memories / "log").glob("*.log"))
    assert "hook helper" in logs and "purple elephant" not in logs


def test_cursor_gets_context_at_session_start_and_its_prompt_is_let_through(memories):
    # Cursor's documented events: sessionStart may add context; beforeSubmitPrompt may not
    start = {
        "hook_event_name": "sessionStart",
        "conversation_id": "c1",
        "session_id": "c1",
        "workspace_roots": [str(REPO)],
        "is_background_agent": False,
    }
    started = json.loads(_hook("session-start", "cursor", start).stdout)
    assert started["additional_context"].startswith("## Memories from earlier sessions")
    prompt = {**start, "hook_event_name": "beforeSubmitPrompt", "prompt": "billing deploy?"}
    assert json.loads(_hook("prompt", "cursor", prompt).stdout) == {"continue": True}


def test_codex_reads_plain_text_and_gets_a_shorter_session_block(memories):
    event = {
        "session_id": "x1",
        "turn_id": "t1",
        "cwd": str(REPO),
        "hook_event_name": "UserPromptSubmit",
        "model": "gpt-5",
        "permission_mode": "default",
        "prompt": "how do we deploy the billing service?",
    }
    done = _hook("prompt", "codex", event)
    assert "helm rollback" in done.stdout and not done.stdout.startswith("{")
    start = {**event, "hook_event_name": "SessionStart", "source": "startup"}
    block = _hook("session-start", "codex", start).stdout
    assert block.startswith("## Memories") and len(block) <= 6_100  # ~2,500 tokens at most


# ---- found by the red team (issue 25) --------------------------------------------------
def test_a_hook_of_another_environment_finds_the_running_helper(memories, tmp_path):
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    first = _hook(
        "prompt", "claude", _prompt("billing deploy?", "e1"), XDG_RUNTIME_DIR=str(runtime)
    )
    assert "helm rollback" in first.stdout
    pid = _helper_pid()
    # WHEN a hook runs where XDG_RUNTIME_DIR is another folder (another terminal, an IDE)
    other = tmp_path / "other"
    other.mkdir(mode=0o700)
    started = time.monotonic()
    again = _hook("prompt", "claude", _prompt("billing deploy?", "e2"), XDG_RUNTIME_DIR=str(other))
    # THEN the same helper answers it at once
    assert "helm rollback" in again.stdout, again.stderr
    assert time.monotonic() - started < 3.0 and _helper_pid() == pid


def test_hostile_events_never_fail_the_agent_nor_kill_the_helper(memories):
    assert "helm rollback" in _hook("prompt", "claude", _prompt("billing deploy?", "h0")).stdout
    pid = _helper_pid()
    deep = '{"prompt": "how do we deploy billing", "x": ' + "[" * 5000 + "]" * 5000 + "}"
    cut = '{"session_id": "h2", "prompt": "how do we deploy billing \\ud83d with helm"}'
    for data in (deep, cut):
        done = subprocess.run(
            [str(MNEMO), "hook", "prompt"], input=data, capture_output=True, text=True,
            timeout=60, cwd=REPO,
        )  # fmt: skip
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert _helper_pid() == pid and _alive(pid)
    closed = subprocess.run(
        f"{MNEMO} hook prompt >&-", shell=True, input=json.dumps(_prompt("billing?", "h3")),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert closed.returncode == 0, closed.stderr


def test_a_project_with_a_package_named_app_does_not_replace_the_helper(memories, tmp_path):
    # The hook runs in the agent's project; `python -m app` there ran the project's own
    # `app` package as the helper (found by bench.agents: every hook then waited 4 s)
    project = tmp_path / "project"
    (project / "app").mkdir(parents=True)
    (project / "app" / "__init__.py").write_text("")
    (project / "app" / "__main__.py").write_text("import time\ntime.sleep(60)\n")
    done = subprocess.run(
        [str(MNEMO), "hook", "prompt"], input=json.dumps(_prompt("billing deploy?", "p1")),
        cwd=project, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "helm rollback" in done.stdout, done.stderr


# ---- issue 46, item 3 -------------------------------------------------------------------
def test_a_switch_a_stopped_helper_holds_up_names_it_and_how_to_end_it(memories, monkeypatch):
    import signal

    from app.core.engine import Engine
    from app.core.vault import cipher

    # GIVEN a warm helper (the session's start made it) that is stopped, so cannot let go
    start = {**_prompt(""), "hook_event_name": "SessionStart", "source": "startup"}
    assert _hook("session-start", "claude", start).returncode == 0
    stuck = _helper_pid()
    assert stuck is not None
    monkeypatch.setattr(cipher, "EXCLUSIVE_WAIT_S", 2.0)
    os.kill(stuck, signal.SIGSTOP)
    try:
        # WHEN the database is to be encrypted
        with Engine() as engine, pytest.raises(Exception) as refused:
            engine.vault.encrypt("passphrase", "a passphrase for the helper test")
    finally:
        os.kill(stuck, signal.SIGCONT)
    # THEN the error names the helper as Mnemo's own, and the command that ends it
    said = str(refused.value)
    assert f"{stuck} (Mnemo's hook helper for agents: mnemo hook stop ends it)" in said, said
    assert "nothing was changed" in said
    # AND the helper, running again, lets go when asked: the switch goes through
    with Engine() as engine:
        engine.vault.encrypt("passphrase", "a passphrase for the helper test")
        assert engine.vault.encrypted


# ---- issue 42, item 2 -------------------------------------------------------------------
def test_a_stuck_helper_costs_one_prompt_two_seconds_and_is_replaced(memories):
    import signal

    # GIVEN a warm helper (the session's start made it), then stopped as if hung
    start = {**_prompt(""), "hook_event_name": "SessionStart", "source": "startup"}
    assert _hook("session-start", "claude", start).returncode == 0
    stuck = _helper_pid()
    assert stuck is not None
    os.kill(stuck, signal.SIGSTOP)
    try:
        # WHEN the next prompt comes
        began = time.monotonic()
        late = _hook("prompt", "claude", _prompt("how do we deploy the billing service?"))
        took = time.monotonic() - began
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(stuck, signal.SIGCONT)
    # THEN the agent waited about the prompt's deadline, not a minute, and was told why
    assert late.returncode == 0 and late.stdout == "", late.stdout
    assert took < 2.0 + 3.0, took  # (the deadline, and Python's start on a busy machine)
    assert "did not answer in 2 s" in late.stderr and "new one" in late.stderr, late.stderr
    # AND a new helper took its place, which answers the prompt after
    wait(lambda: not _alive(stuck), 30, "the stuck helper to be gone")
    wait(lambda: _helper_pid() not in (None, stuck), 30, "a new helper")
    after = wait(
        lambda: (
            "helm rollback" in (out := _hook("prompt", "claude", _prompt("billing?", "s2"))).stdout
            and out
        ),  # fmt: skip
        60,
        "the new helper to answer",
    )
    assert after.returncode == 0
    assert _helpers_of(memories) == [_helper_pid()]


def test_after_a_helper_was_killed_the_next_one_is_found_and_stopped(memories):
    import signal

    start = {**_prompt(""), "hook_event_name": "SessionStart", "source": "startup"}
    assert _hook("session-start", "claude", start).returncode == 0
    killed = _helper_pid()
    assert killed is not None
    # WHEN it dies without a word (kill -9, the OOM killer), and a hook starts another
    os.kill(killed, signal.SIGKILL)
    wait(lambda: not _alive(killed), 30, "the helper to die")
    assert _hook("session-start", "claude", start).returncode == 0
    # THEN `hook status` names the new one (its lock file held only its own lines) ...
    new = wait(lambda: _helper_pid(), 30, "hook status to name the new helper")
    assert new != killed and _helpers_of(memories) == [new]
    # ... and `hook stop` stops it
    stopped = subprocess.run(
        [str(MNEMO), "hook", "stop"], capture_output=True, text=True, timeout=60
    )
    assert f"(pid {new}) stopped" in stopped.stdout, stopped.stdout + stopped.stderr
    wait(lambda: not _alive(new), 30, "the new helper to exit")


def test_a_cold_prompt_waits_at_most_its_deadline(memories):
    # WHEN a prompt comes with no helper running (a session started before Mnemo was wired)
    began = time.monotonic()
    done = _hook("prompt", "claude", _prompt("how do we deploy the billing service?"))
    took = time.monotonic() - began
    # THEN it is answered, with the memory when the helper made it in time, else with
    # nothing and a line saying why; never later than the deadline allows
    assert done.returncode == 0 and took < 2.0 + 3.0, took
    assert "helm rollback" in done.stdout or "is starting" in done.stderr, done.stderr
    # AND the helper it started answers the next one
    wait(lambda: "helm rollback" in _hook("prompt", "claude", _prompt("billing?", "s2")).stdout)


def test_a_tool_event_is_answered_while_the_engine_is_busy(embedder, mnemo_home):
    # Issue 42, item 3: every tool hook (Claude Code runs two per tool call) waited for the
    # engine's thread, behind the backfill's pass, to be told "nothing to add"
    import socket
    import threading

    from app.agents import helper, hook
    from app.core.engine import Engine
    from app.core.runner import INTERACTIVE, Runner

    runner = Runner(lambda: Engine(embedder=embedder))
    runner.start()
    gate = threading.Event()
    left, right = socket.socketpair()
    try:
        busy = runner.submit(lambda e: gate.wait(60), INTERACTIVE)  # the engine is busy
        serving = helper.Helper(left, runner, 60)
        event = {"session_id": "t", "cwd": str(REPO), "hook_event_name": "PostToolUse",
                 "tool_name": "Bash", "tool_input": {"command": "ls"}}  # fmt: skip
        request = f"MNEMO-HOOK {hook.VERSION} tool claude\n{json.dumps(event)}".encode()
        answered = []
        asking = threading.Thread(target=lambda: answered.append(serving.handle(request)))
        asking.start()
        # THEN the agent has its answer while the engine is still busy
        wait(lambda: answered, timeout=30, what="the tool hook's answer")
        assert answered == [b"ok\n"] and not busy.done()
        # AND a prompt still waits for the engine (it needs its memories)
        prompt = {"session_id": "t", "cwd": str(REPO), "hook_event_name": "UserPromptSubmit",
                  "prompt": "billing deploy?"}  # fmt: skip
        request = f"MNEMO-HOOK {hook.VERSION} prompt claude\n{json.dumps(prompt)}".encode()
        asking = threading.Thread(target=lambda: answered.append(serving.handle(request)))
        asking.start()
        asking.join(0.5)
        assert len(answered) == 1
        gate.set()
        wait(lambda: len(answered) == 2, timeout=30, what="the prompt's answer")
        assert answered[1].startswith(b"ok\n")
    finally:
        gate.set()
        assert runner.stop(30)
        left.close()
        right.close()
