"""pyzenoh.ext (zenoh-ext serialization, advanced publication and subscription) against
eclipse-zenoh's zenoh.ext."""
