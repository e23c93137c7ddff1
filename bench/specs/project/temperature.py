"""Temperature conversions for the weather report."""


def to_fahrenheit(celsius: float) -> float:
    """Degrees Fahrenheit for `celsius` degrees Celsius."""
    return celsius * 9 / 5
