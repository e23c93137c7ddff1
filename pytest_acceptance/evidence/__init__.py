"""The evidence trail: fragments per criterion, reports, deltas, HTML and CI outputs."""
