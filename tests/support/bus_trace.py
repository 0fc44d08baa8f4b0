"""Reading the virtual rig's bus trace: the goals written and the positions read before them.

writes = goal_writes(client.trace("left_follower"))      # [(record index, {motor id: goal}), ...]
pose = present_read_before(records, writes[0][0])       # {motor id: Present_Position} just before
"""


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
