"""A typed Python client generated from the live server's OpenAPI document by openapi-python-client (a tool
nobody here wrote) creates a customer, a conversation and a message, and reads them back."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def parley_client(server, tmp_path_factory):
    """The generated package, importable for this module's tests only."""
    where = tmp_path_factory.mktemp("generated")
    with server.client() as http:
        (where / "openapi.json").write_bytes(http.get("/schema/openapi.json").content)
    generated = subprocess.run(
        [str(Path(sys.executable).parent / "openapi-python-client"), "generate", "--path", "openapi.json",
         "--meta", "none", "--output-path", "parley_client"],
        cwd=where, capture_output=True, text=True, timeout=240)
    assert generated.returncode == 0, generated.stdout + generated.stderr
    sys.path.insert(0, str(where))
    try:
        yield importlib.import_module("parley_client")
    finally:
        sys.path.remove(str(where))
        for name in [name for name in sys.modules if name == "parley_client" or name.startswith("parley_client.")]:
            del sys.modules[name]


def api(package, path: str):
    return importlib.import_module(f"{package.__name__}.api.{path}")


def test_the_generated_client_creates_and_reads_back(parley_client, server, tenant):
    models = importlib.import_module("parley_client.models")
    # an API key's header is `Basic base64(secret:)`: the client sends the encoded part after its prefix
    integrator = parley_client.AuthenticatedClient(
        base_url=server.base_url, token=tenant.key()["Authorization"].split()[1], prefix="Basic")
    operator = parley_client.AuthenticatedClient(base_url=server.base_url, token=tenant.operator_token, prefix="Token")

    customer = api(parley_client, "customers.create_customer").sync(
        client=integrator, body=models.CustomerCreate(website_id=str(tenant.website_id), email="ada@example.com",
                                                      nickname="Ada"))
    assert isinstance(customer, models.Customer), customer
    assert customer.email == "ada@example.com" and str(customer.website_id) == str(tenant.website_id)

    conversation = api(parley_client, "conversations.create_conversation").sync(
        client=integrator, body=models.ConversationCreate(website_id=str(tenant.website_id),
                                                          customer_id=str(customer.field_id)))
    assert isinstance(conversation, models.ConversationRecord), conversation
    assert conversation.customer_id == customer.field_id and conversation.resolved is False

    message = api(parley_client, "messages.create_message").sync(
        client=integrator, body=models.MessageCreate(conversation_id=str(conversation.field_id),
                                                     content="Hello from a generated client",
                                                     from_=models.MessageCreateFrom.CUSTOMER))
    assert isinstance(message, models.Message), message
    assert message.conversation_id == conversation.field_id

    read = api(parley_client, "messages.get_message").sync(client=operator, message_id=str(message.field_id))
    assert isinstance(read, models.Message) and read.content == "Hello from a generated client"
    assert api(parley_client, "customers.get_customer").sync(
        client=operator, customer_id=str(customer.field_id)).nickname == "Ada"
    listed = api(parley_client, "messages.list_messages").sync(
        client=integrator, conversation_id=str(conversation.field_id))
    assert [m.field_id for m in listed] == [message.field_id]


def test_an_error_is_the_typed_problem(parley_client, server, tenant):
    models = importlib.import_module("parley_client.models")
    operator = parley_client.AuthenticatedClient(base_url=server.base_url, token=tenant.operator_token, prefix="Token")
    missing = api(parley_client, "customers.get_customer").sync(
        client=operator, customer_id="01900000-0000-7000-8000-000000000000")
    assert isinstance(missing, models.Problem) and missing.status == 404
    refused = api(parley_client, "messages.create_message").sync_detailed(
        client=operator, body=models.MessageCreate(conversation_id="not-an-id", content="x",
                                                   from_=models.MessageCreateFrom.OPERATOR))
    assert refused.status_code == 404 and isinstance(refused.parsed, models.Problem)
