"""One Beam pipeline per stage: wiring of sources, transforms and sinks only."""
