"""pyzenoh.ext (zenoh-ext serialization) against eclipse-zenoh's zenoh.ext."""
