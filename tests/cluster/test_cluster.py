"""Issue 17's scenarios on the real cluster: 30 clients through haproxy on three replicas over PostgreSQL.

Each scenario runs the load with a disturbance beside it, waiting for states (work done, haproxy's
view of a replica), then checks every invariant (cluster_checks.check_all); a failure's message
shows what the database holds of the conversations whose clients did not finish, and each
replica's and haproxy's output.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest
from cluster_checks import NO_LEASES, LeaseWatcher, check_all, lease_table
from cluster_harness import Cluster, wait_until

CLIENTS = 30
JOBS = 2
ROUNDS = 3
WORK = CLIENTS * JOBS * ROUNDS
"""Client tool calls in an undisturbed load."""


async def test_thirty_clients_on_three_replicas_finish_with_every_invariant(
    cluster: Cluster, leases: LeaseWatcher
) -> None:
    clients = await cluster.run_load(CLIENTS, jobs=JOBS, rounds=ROUNDS)
    check_all(cluster, clients, jobs=JOBS, watcher=leases)
    assert cluster.executed() == WORK
    assert len(cluster.tally()) == WORK
    served = {name: int(row["stot"]) for name, row in cluster.haproxy.stats().items()}
    assert all(served.values()), f"haproxy spread the clients over every replica: {served}"


async def test_kill_9_of_a_replica_mid_model_turn(cluster: Cluster, leases: LeaseWatcher) -> None:
    async def kill_one() -> None:
        await wait_for(lambda: cluster.models_held() == CLIENTS, "every client's first run is in a model turn")
        await cluster.kill("r1")  # its clients reconnect through haproxy to r2 and r3
        cluster.release_models()

    clients = await cluster.run_load(CLIENTS, jobs=JOBS, rounds=ROUNDS, during=kill_one, hold=True)
    check_all(cluster, clients, jobs=JOBS, watcher=leases)


async def test_kill_9_of_a_replica_while_its_runs_wait_for_client_tools(cluster: Cluster, leases: LeaseWatcher) -> None:
    gate = anyio.Event()

    async def kill_one() -> None:
        await wait_until_all_held(cluster)
        await cluster.kill("r1")
        gate.set()  # the results of r1's clients go out on their new sockets, to r2 and r3

    clients = await cluster.run_load(CLIENTS, jobs=JOBS, rounds=ROUNDS, during=kill_one, gate=gate)
    check_all(cluster, clients, jobs=JOBS, watcher=leases)


async def test_kill_9_of_a_replica_under_load(cluster: Cluster, leases: LeaseWatcher) -> None:
    async def kill_one() -> None:
        await wait_work(cluster, WORK // 4)
        await cluster.kill("r1")

    clients = await cluster.run_load(CLIENTS, jobs=JOBS, rounds=ROUNDS, during=kill_one)
    check_all(cluster, clients, jobs=JOBS, watcher=leases)


async def test_a_replica_stopped_past_its_lease_is_fenced_when_it_continues(
    cluster: Cluster, leases: LeaseWatcher
) -> None:
    async def pause_one() -> None:
        await wait_work(cluster, WORK // 4)
        replica = cluster.replica("r1")
        replica.pause()
        await cluster.haproxy.wait_status("r1", "DOWN")  # its sessions are cut: the clients move
        moved_on = cluster.executed()
        await wait_work(cluster, moved_on + CLIENTS // 2)  # the others took over (and its leases expired)
        replica.resume()
        await cluster.haproxy.wait_status("r1", "UP")

    clients = await cluster.run_load(CLIENTS, jobs=JOBS, rounds=ROUNDS, during=pause_one)
    await cluster.settle("r1")  # what its stale runs do once it runs again, the checks see
    check_all(cluster, clients, jobs=JOBS, watcher=leases)


async def test_postgres_restarted_immediately_during_runs(cluster: Cluster, leases: LeaseWatcher) -> None:
    async def crash_postgres() -> None:
        await wait_work(cluster, WORK // 4)
        await cluster.restart_postgres()

    clients = await cluster.run_load(CLIENTS, jobs=JOBS, rounds=ROUNDS, during=crash_postgres)
    check_all(cluster, clients, jobs=JOBS, watcher=leases)


async def test_a_client_reconnects_to_another_replica_mid_tool_call(cluster: Cluster, leases: LeaseWatcher) -> None:
    gate = anyio.Event()

    async def move_held_clients() -> None:
        await wait_until_all_held(cluster)
        # r1 takes no new connection and its sessions are cut: its clients reconnect to r2 or r3
        # while r1, alive, still owns their runs, each waiting for a Work result.
        cluster.haproxy.admin("set server replicas/r1 state drain")
        cluster.haproxy.admin("shutdown sessions server replicas/r1")
        await wait_for(lambda: int(cluster.haproxy.stats()["r1"]["scur"]) == 0, "r1 has no session")
        await wait_for(lambda: all(c.client is None or c.client.connected for c in cluster.clients), "all reconnected")
        gate.set()

    clients = await cluster.run_load(CLIENTS, jobs=JOBS, rounds=ROUNDS, during=move_held_clients, gate=gate)
    await cluster.settle("r1")  # the old owner, alive, acts on the runs it lost: the checks see what it did
    check_all(cluster, clients, jobs=JOBS, watcher=leases)


async def test_a_rolling_restart_under_load(cluster: Cluster, leases: LeaseWatcher) -> None:
    async def roll() -> None:
        await wait_work(cluster, WORK // 6)
        await cluster.rolling_restart()

    clients = await cluster.run_load(CLIENTS, jobs=JOBS, rounds=ROUNDS, during=roll, within=60)
    check_all(cluster, clients, jobs=JOBS, watcher=leases)


async def test_no_two_replicas_ever_share_an_epoch(cluster: Cluster, leases: LeaseWatcher) -> None:
    if lease_table(cluster.pg.dsn) is None:
        pytest.skip(NO_LEASES)

    gate = anyio.Event()

    async def kill_one() -> None:  # while every run waits for a client tool: the takeover is not racy today
        await wait_until_all_held(cluster)
        await cluster.kill("r2")
        gate.set()

    clients = await cluster.run_load(CLIENTS, jobs=JOBS, rounds=ROUNDS, during=kill_one, gate=gate)
    check_all(cluster, clients, jobs=JOBS, watcher=leases)
    assert leases.owners, "the lease table was sampled"


# -- waiting for states ---------------------------------------------------------------------------


async def wait_work(cluster: Cluster, executed: int) -> None:
    """Wait until the clients together executed `executed` client tool calls."""
    await wait_for(lambda: cluster.executed() >= executed, f"{executed} client tool calls ran")


async def wait_for(condition: Callable[[], bool], what: str) -> None:
    await wait_until(condition, what, within=60)


async def wait_until_all_held(cluster: Cluster) -> None:
    await wait_for(lambda: len(cluster.clients) == CLIENTS, "the clients exist")
    await wait_for(lambda: all(c.waiting for c in cluster.clients), "every client holds a Work call")
