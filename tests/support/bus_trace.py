"""Reading the virtual rig's bus trace: the goals written and the positions read before them.

writes = goal_writes(client.trace("left_follower"))      # [(record index, {motor id: goal}), ...]
pose = present_read_before(records, writes[0][0])       # {motor id: Present_Position} just before
check_frozen(client)                                    # the e-stop's freeze, read back from the trace
"""

import time

from robot.virtual.client import VirtualRigClient

FOLLOWERS = ("left_follower", "right_follower")
LEADERS = ("left_leader", "right_leader")
FREEZE_COUNTS = 2  # the frozen goal is the present position read just before it, to a couple of counts


def goal_writes(records: list[dict]) -> list[tuple[int, dict[int, int]]]:
    """(record index, goal by motor id) of every Goal_Position write in one bus's trace."""
    writes = []
    for index, record in enumerate(records):
        if record.get("dir") != "host->bus" or record.get("register") != "Goal_Position":
            continue
        if record.get("inst") == "SYNC_WRITE":
            writes.append((index, {int(k): v for k, v in record["values"].items()}))
        elif record.get("inst") == "WRITE":
            writes.append((index, {int(record["id"]): record["value"]}))
    return writes


def present_read_before(records: list[dict], index: int) -> dict[int, int]:
    """Present_Position by motor id, from the status packets of the last positions read (sync or not) before `index`."""
    starts = [
        i
        for i in range(index)
        if records[i].get("inst") in ("SYNC_READ", "READ") and records[i].get("register") == "Present_Position"
    ]
    assert starts, "no position read before that goal write"
    values: dict[int, int] = {}
    for record in records[starts[-1] + 1 : index]:
        data = bytes.fromhex(record["hex"]) if record.get("dir") == "bus->host" else b""
        while len(data) >= 8 and data[:2] == b"\xff\xff":  # ff ff id length error p0 p1 checksum
            if data[3] == 4:
                values[data[2]] = int.from_bytes(data[5:7], "little")
            data = data[4 + data[3] :]
    return values


def check_frozen(client: VirtualRigClient) -> None:
    """The last goal each follower got is the pose it was read at just before; torque on; leaders released.

    The freeze happens within one tick: the goal written is the position read in the same tick, and
    nothing is written after it (the e-stop of so101-teleop, -record and -deploy, and so101-studio's button).
    """
    frozen: dict[str, dict[int, int]] = {}
    for arm in FOLLOWERS:
        records = client.trace(arm)
        writes = goal_writes(records)
        assert writes, f"{arm}: no goal write since the trace was cleared before the e-stop"
        index, last = writes[-1]
        read = present_read_before(records, index)
        assert set(read) == set(last), (arm, read, last)
        assert all(abs(last[m] - read[m]) <= FREEZE_COUNTS for m in last), f"{arm}: {last} is not the pose {read}"
        after = [r for r in records[index:] if r.get("register") == "Torque_Enable" and r.get("dir") == "host->bus"]
        assert not after, f"{arm}: torque written after the freeze: {after}"
        frozen[arm] = last
    first = client.state()
    for arm in FOLLOWERS:
        assert {m["motor_id"]: m["goal_position"] for m in first[arm]} == frozen[arm], (arm, first[arm])
        assert all(m["torque_enabled"] for m in first[arm]), f"{arm} was released: {first[arm]}"
    for arm in LEADERS:
        assert not any(m["torque_enabled"] for m in first[arm]), f"{arm} keeps torque: {first[arm]}"
    time.sleep(0.5)  # nothing runs any more: a moment later, nothing has moved the goals
    later = client.state()
    for arm in FOLLOWERS:
        assert [m["goal_position"] for m in later[arm]] == [m["goal_position"] for m in first[arm]], arm
        assert all(m["torque_enabled"] for m in later[arm]), arm
