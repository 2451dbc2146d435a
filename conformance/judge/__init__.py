"""The judge: an implementation's trace against the oracle's, what a profile set compares, what a divergence is put down to and why, and the failures an implementation's listed departures explain."""
