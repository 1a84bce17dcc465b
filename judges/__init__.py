"""The Critical Analysis Filter: rules and judges as data, local checks, the cascade, the refiner."""
