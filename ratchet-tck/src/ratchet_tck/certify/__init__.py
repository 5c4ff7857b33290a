"""Suites that ``ratchet-tck certify`` runs against a store URL or an installed coordinator."""
