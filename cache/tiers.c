/* tiers.c - placeholder, being written. */
