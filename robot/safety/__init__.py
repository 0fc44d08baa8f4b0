"""The safety layer between every action source and the arms: limits, caps, watchdog, e-stop."""
