"""A clock the test moves by hand (the emulator's and the control loop's `clock=`)."""


class FakeClock:
    """A clock the test moves by hand, so physics is exact and repeatable."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds
