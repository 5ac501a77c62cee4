"""The ``sweep`` scenario: another scenario at many sizes, and a growth fit per series."""
