"""What the tests share: servers and tenants, browsers, seeds, receivers, agents."""
