"""Yield points (core/give_way.py): a thread with a policy sleeps there while requests run, in
proportion to the work it did since the last point; other threads go straight on."""

from __future__ import annotations

import threading
import time

from websift.core.give_way import GiveWay, give_way, giving_way, waited


def burn(cpu_seconds: float) -> None:
    """Work this thread's CPU for at least ``cpu_seconds``."""
    until = time.thread_time() + cpu_seconds
    while time.thread_time() < until:
        sum(range(1000))


def test_without_a_policy_a_yield_point_goes_straight_on() -> None:
    started = time.perf_counter()
    for _ in range(1000):
        give_way()
    assert time.perf_counter() - started < 0.5  # no sleep among 1,000 points
    assert waited() == 0.0


def test_while_busy_it_sleeps_so_its_work_is_at_most_its_share() -> None:
    policy = GiveWay(lambda: True, share=0.25, pause_s=1.0)
    with giving_way(policy):
        burn(0.005)
        started = time.perf_counter()
        give_way()
        slept = time.perf_counter() - started
        assert waited() == policy.waited_s
    assert policy.pauses == 1
    # three times the work since the policy began (at least 5 ms of CPU), really slept
    assert policy.waited_s >= 3 * 0.005
    assert slept >= policy.waited_s
    assert waited() == 0.0  # the block ended: no policy in force


def test_one_pause_is_bounded_and_an_idle_server_is_not_waited_for() -> None:
    busy = [True]
    policy = GiveWay(lambda: busy[0], share=0.01, pause_s=0.002)
    with giving_way(policy):
        burn(0.005)
        give_way()
        assert policy.waited_s == 0.002  # 99x the work, capped at pause_s
        busy[0] = False
        burn(0.005)
        give_way()
    assert policy.pauses == 1 and policy.waited_s == 0.002


def test_a_policy_holds_in_its_own_thread_only_and_nests() -> None:
    outer = GiveWay(lambda: True, share=0.5, pause_s=0.001)
    inner = GiveWay(lambda: False)
    other_waited: list[float] = []

    def other() -> None:
        burn(0.002)
        give_way()
        other_waited.append(waited())

    with giving_way(outer):
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
        with giving_way(inner):
            burn(0.002)
            give_way()
        assert inner.pauses == 0 and outer.pauses == 0
        give_way()  # the outer policy is in force again
    assert other_waited == [0.0]
    assert outer.pauses == 1
