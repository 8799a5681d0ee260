import base64
import json
from typing import Any

import pytest
from pydantic import ValidationError

from toolwire.client_tools.definitions import (
    Augmentation,
    BinaryContent,
    ClientSkill,
    ClientTool,
    ClientToolGroup,
    ClientToolRequest,
    ClientToolResponse,
    ContextItem,
    JsonContent,
    TextContent,
    container_name,
    content_to_data,
)
from toolwire.errors import EnvelopeError, RegistrationError

OPEN_FILE_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "line": {"type": "integer"}},
    "required": ["path"],
}
SHOW_MESSAGE_SCHEMA = {
    "type": "object",
    "properties": {
        "message": {"type": "string"},
        "severity": {"type": "string", "enum": ["info", "warning", "error"]},
    },
    "required": ["message"],
}

# Seed 004, "Example: IDE Tool Group", as a client sends it.
IDE_JSON = """
{
  "name": "IDE",
  "description": "VS Code interaction tools",
  "startCollapsed": true,
  "functionResult": null,
  "systemPrompt": "Use ShowMessage for important notifications to the user.",
  "tools": [
    {"name": "OpenFile", "description": "Open a file in the editor", "parametersSchema": {
      "type": "object",
      "properties": {"path": {"type": "string"}, "line": {"type": "integer"}},
      "required": ["path"]}},
    {"name": "GetSelection", "description": "Get the user's current text selection",
     "parametersSchema": {"type": "object"}},
    {"name": "ShowMessage", "description": "Show a message to the user", "parametersSchema": {
      "type": "object",
      "properties": {
        "message": {"type": "string"},
        "severity": {"type": "string", "enum": ["info", "warning", "error"]}},
      "required": ["message"]}}
  ]
}
"""

# Seed 004, "Client Skills": ClientSkillReference objects.
CHECKOUT_JSON = """
{
  "name": "Checkout",
  "tools": [{"name": "ValidateCart"}, {"name": "ProcessPayment"}, {"name": "ConfirmOrder"}],
  "skills": [{
    "name": "Complete Checkout",
    "description": "Process a customer's checkout",
    "functionResult": null,
    "systemPrompt": "CHECKOUT WORKFLOW:\\n1. Validate the cart contents\\n2. Process payment",
    "references": [{"name": "ValidateCart"}, {"name": "ProcessPayment"}, {"name": "ConfirmOrder"}]
  }]
}
"""

# Seed 004, "Dynamic State Changes (Augmentation)".
LOGIN_AUGMENTATION_JSON = """
{
  "injectToolGroups": [{"name": "AdminTools", "tools": [{"name": "Logout"}]}],
  "removeToolGroups": ["LoginTools"],
  "expandToolGroups": ["AdminTools"],
  "collapseToolGroups": ["GuestTools"],
  "hideTools": ["Login"],
  "showTools": ["Logout"],
  "addContext": [{"key": "user", "value": "Admin user logged in"}]
}
"""

PNG = b"\x89PNG\r\n\x1a\n\x00\xff"


def ide_group() -> ClientToolGroup:
    return ClientToolGroup(
        name="IDE",
        description="VS Code interaction tools",
        start_collapsed=True,
        system_prompt="Use ShowMessage for important notifications to the user.",
        tools=(
            ClientTool(name="OpenFile", description="Open a file in the editor", parameters_schema=OPEN_FILE_SCHEMA),
            ClientTool(name="GetSelection", description="Get the user's current text selection"),
            ClientTool(
                name="ShowMessage", description="Show a message to the user", parameters_schema=SHOW_MESSAGE_SCHEMA
            ),
        ),
    )


def test_seed_ide_group_parses_from_camel_case_json():
    group = ClientToolGroup.from_dict(json.loads(IDE_JSON))
    assert group == ide_group()


def test_seed_ide_group_tool_names_and_defaults():
    group = ide_group()
    assert [tool.name for tool in group.tools] == ["OpenFile", "GetSelection", "ShowMessage"]
    assert group.tools[1].parameters_schema == {"type": "object"}
    assert group.tools[0].requires_permission is False
    assert group.function_result is None


def test_seed_checkout_skill_references_are_normalized_to_names():
    group = ClientToolGroup.from_dict(json.loads(CHECKOUT_JSON))
    [skill] = group.skills
    assert skill.name == "Complete Checkout"
    assert skill.references == ("ValidateCart", "ProcessPayment", "ConfirmOrder")


def test_skill_reference_accepts_strings_and_tool_name_objects():
    skill = ClientSkill.from_dict({"name": "s", "references": ["A", {"toolName": "B"}, {"tool_name": "C"}]})
    assert skill.references == ("A", "B", "C")


def test_skill_reference_object_with_other_keys_is_refused():
    with pytest.raises(RegistrationError, match="a reference is a tool name"):
        ClientSkill.from_dict({"name": "s", "references": [{"name": "A", "extra": 1}]})


def test_seed_checkout_group_from_python_equals_json():
    group = ClientToolGroup(
        name="Checkout",
        tools=(ClientTool(name="ValidateCart"), ClientTool(name="ProcessPayment"), ClientTool(name="ConfirmOrder")),
        skills=(
            ClientSkill(
                name="Complete Checkout",
                description="Process a customer's checkout",
                system_prompt="CHECKOUT WORKFLOW:\n1. Validate the cart contents\n2. Process payment",
                references=("ValidateCart", "ProcessPayment", "ConfirmOrder"),
            ),
        ),
    )
    assert ClientToolGroup.from_dict(json.loads(CHECKOUT_JSON)) == group


def test_seed_login_augmentation_parses():
    augmentation = Augmentation.from_dict(json.loads(LOGIN_AUGMENTATION_JSON))
    assert [group.name for group in augmentation.inject_tool_groups] == ["AdminTools"]
    assert augmentation.remove_tool_groups == ("LoginTools",)
    assert augmentation.expand_tool_groups == ("AdminTools",)
    assert augmentation.collapse_tool_groups == ("GuestTools",)
    assert augmentation.hide_tools == ("Login",)
    assert augmentation.show_tools == ("Logout",)
    assert augmentation.add_context == (ContextItem(key="user", value="Admin user logged in"),)


def test_augmentation_name_lists_keep_order_and_drop_repeats():
    augmentation = Augmentation(hide_tools=["b", "a", "b", "c", "a"])  # type: ignore[arg-type]
    assert augmentation.hide_tools == ("b", "a", "c")


def test_augmentation_name_sets_from_python_are_sorted():
    augmentation = Augmentation(remove_tool_groups={"LoginTools", "GuestTools"})  # type: ignore[arg-type]
    assert augmentation.remove_tool_groups == ("GuestTools", "LoginTools")


def test_augmentation_name_list_refuses_a_bare_string():
    with pytest.raises(RegistrationError, match="hideTools"):
        Augmentation.from_dict({"hideTools": "Login"})


def test_augmentation_is_empty():
    assert Augmentation().is_empty
    assert not Augmentation(show_tools=("Logout",)).is_empty


def test_augmentation_error_names_the_injected_group_and_tool():
    data = {"injectToolGroups": [{"name": "AdminTools", "tools": [{"name": "Ban", "requiresPermision": True}]}]}
    with pytest.raises(RegistrationError) as caught:
        Augmentation.from_dict(data)
    assert (caught.value.group, caught.value.tool) == ("AdminTools", "Ban")


def test_seed_response_with_text_json_and_binary_content():
    data = {
        "requestId": "r1",
        "content": [
            {"type": "text", "text": "File opened successfully"},
            {"type": "json", "value": {"line": 42, "column": 10}},
            {"type": "binary", "mimeType": "image/png", "data": base64.b64encode(PNG).decode(), "filename": "s.png"},
        ],
        "success": True,
    }
    response = ClientToolResponse.from_dict(data)
    assert response.content == (
        TextContent(text="File opened successfully"),
        JsonContent(value={"line": 42, "column": 10}),
        BinaryContent(mime_type="image/png", data=PNG, filename="s.png"),
    )


def test_failed_response_parses_error_message():
    response = ClientToolResponse.from_dict({"requestId": "r1", "success": False, "errorMessage": "no such file"})
    assert (response.success, response.error_message, response.content) == (False, "no such file", ())


def test_response_with_augmentation_parses():
    data = {"requestId": "r1", "augmentation": json.loads(LOGIN_AUGMENTATION_JSON)}
    response = ClientToolResponse.from_dict(data)
    assert response.augmentation is not None and response.augmentation.show_tools == ("Logout",)


def test_binary_content_accepts_raw_bytes_from_messagepack():
    content = BinaryContent.from_dict({"type": "binary", "mimeType": "image/png", "data": PNG})
    assert content.data == PNG


def test_binary_content_refuses_data_that_is_not_base64():
    with pytest.raises(EnvelopeError, match="base64"):
        BinaryContent.from_dict({"type": "binary", "mimeType": "image/png", "data": "not base64!"})


def test_binary_to_dict_writes_base64_or_raw_bytes():
    content = BinaryContent(mime_type="image/png", data=PNG)
    assert content.to_dict()["data"] == base64.b64encode(PNG).decode()
    assert content.to_dict(binary="bytes")["data"] == PNG


def test_response_to_dict_with_raw_bytes():
    response = ClientToolResponse(request_id="r1", content=(BinaryContent(mime_type="a/b", data=PNG),))
    assert response.to_dict(binary="bytes")["content"][0]["data"] == PNG


@pytest.mark.parametrize(
    "model",
    [
        ide_group(),
        ClientToolGroup.from_dict(json.loads(CHECKOUT_JSON)),
        Augmentation.from_dict(json.loads(LOGIN_AUGMENTATION_JSON)),
        ClientToolResponse(
            request_id="r1",
            content=(TextContent(text="t"), JsonContent(value=[1]), BinaryContent(mime_type="a/b", data=PNG)),
            augmentation=Augmentation(hide_tools=("Login",)),
        ),
    ],
    ids=["ide", "checkout", "augmentation", "response"],
)
def test_round_trip_through_json(model: Any):
    data = json.loads(json.dumps(model.to_dict()))
    assert type(model).from_dict(data) == model


def test_to_dict_uses_camel_case():
    data = ClientTool(name="Delete", requires_permission=True).to_dict()
    assert data == {
        "name": "Delete",
        "description": "",
        "parametersSchema": {"type": "object"},
        "requiresPermission": True,
    }


def test_snake_case_keys_are_accepted_too():
    assert ClientTool.from_dict({"name": "Delete", "requires_permission": True}).requires_permission is True


@pytest.mark.parametrize("value", ["yes", "false", 1, 0, None])
def test_requires_permission_must_be_a_boolean(value: Any):
    with pytest.raises(RegistrationError, match="requiresPermission") as caught:
        ClientToolGroup.from_dict({"name": "IDE", "tools": [{"name": "Delete", "requiresPermission": value}]})
    assert (caught.value.group, caught.value.tool) == ("IDE", "Delete")


@pytest.mark.parametrize("value", ["no", 0, "true"])
def test_start_collapsed_must_be_a_boolean(value: Any):
    with pytest.raises(RegistrationError, match="startCollapsed"):
        ClientToolGroup.from_dict({"name": "IDE", "startCollapsed": value})


@pytest.mark.parametrize("field", ["success", "terminal", "needsFollowup"])
def test_the_flags_of_a_response_must_be_booleans(field: str):
    with pytest.raises(EnvelopeError, match=field):
        ClientToolResponse.from_dict({"requestId": "req_1", field: "yes"})


def test_typo_in_a_field_name_is_refused_with_a_suggestion():
    with pytest.raises(
        RegistrationError, match=r"unknown field 'requiresPermision' \(did you mean 'requiresPermission'"
    ):
        ClientTool.from_dict({"name": "Delete", "requiresPermision": True})


def test_error_in_a_tool_names_the_group_and_the_tool():
    data = json.loads(IDE_JSON)
    data["tools"][2]["parametersSchema"] = "not an object"
    with pytest.raises(RegistrationError) as caught:
        ClientToolGroup.from_dict(data)
    assert (caught.value.group, caught.value.tool) == ("IDE", "ShowMessage")
    assert "tools[2].parametersSchema" in str(caught.value)


def test_error_in_a_skill_names_the_skill():
    data = json.loads(CHECKOUT_JSON)
    data["skills"][0]["systemPrompt"] = 5
    with pytest.raises(RegistrationError) as caught:
        ClientToolGroup.from_dict(data)
    assert caught.value.tool == "Complete Checkout"


def test_invalid_tool_name_is_refused():
    with pytest.raises(RegistrationError, match="'Open File' is not a valid name"):
        ClientTool.from_dict({"name": "Open File"})


def test_tool_name_longer_than_64_is_refused_from_python_too():
    with pytest.raises(ValidationError, match="not a valid name"):
        ClientTool(name="a" * 65)


def test_skill_name_may_contain_spaces_but_not_control_characters():
    assert ClientSkill(name="Complete Checkout").name == "Complete Checkout"
    with pytest.raises(RegistrationError, match="not a valid skill name"):
        ClientSkill.from_dict({"name": "bad\nname"})


def test_description_over_4096_characters_is_refused():
    with pytest.raises(RegistrationError, match="at most 4096 characters"):
        ClientTool.from_dict({"name": "t", "description": "x" * 4097})


def test_system_prompt_over_16384_characters_is_refused():
    with pytest.raises(RegistrationError, match="at most 16384 characters"):
        ClientToolGroup.from_dict({"name": "g", "systemPrompt": "x" * 16385})


def test_more_than_128_tools_in_a_group_is_refused():
    tools = [{"name": f"t{i}"} for i in range(129)]
    with pytest.raises(RegistrationError, match="at most 128 items"):
        ClientToolGroup.from_dict({"name": "g", "tools": tools})


def test_more_than_64_skills_in_a_group_is_refused():
    skills = [{"name": f"s{i}"} for i in range(65)]
    with pytest.raises(RegistrationError, match="at most 64 items"):
        ClientToolGroup.from_dict({"name": "g", "skills": skills})


def test_more_than_128_references_in_a_skill_is_refused():
    with pytest.raises(RegistrationError, match="at most 128 items"):
        ClientSkill.from_dict({"name": "s", "references": [f"t{i}" for i in range(129)]})


def test_context_value_over_16384_characters_is_refused():
    with pytest.raises(RegistrationError, match="at most 16384 characters"):
        ContextItem.from_dict({"key": "user", "value": "x" * 16385})


def test_null_description_means_empty():
    assert ClientToolGroup.from_dict({"name": "g", "description": None}).description == ""


def test_models_are_frozen():
    tool = ClientTool(name="t")
    with pytest.raises(ValueError, match="frozen"):
        tool.name = "u"


def test_invalid_response_raises_envelope_error():
    with pytest.raises(EnvelopeError, match="content"):
        ClientToolResponse.from_dict({"requestId": "r1", "content": [{"type": "video"}]})


def test_response_without_request_id_is_refused():
    with pytest.raises(EnvelopeError, match="requestId"):
        ClientToolResponse.from_dict({"content": []})


@pytest.mark.parametrize(
    ("name", "offered"),
    [("Complete Checkout", "Complete_Checkout"), ("IDE", "IDE"), ("a  b!c", "a_b_c"), ("x" * 70, "x" * 64)],
)
def test_container_name(name: str, offered: str):
    assert container_name(name) == offered


def test_content_to_data_without_items_is_none():
    assert content_to_data(()) is None


def test_content_to_data_of_one_text_is_the_text():
    assert content_to_data([TextContent(text="File opened successfully")]) == "File opened successfully"


def test_content_to_data_of_one_json_is_the_value():
    assert content_to_data([JsonContent(value={"line": 42})]) == {"line": 42}


def test_content_to_data_of_one_binary_is_a_tagged_object():
    data = content_to_data([BinaryContent(mime_type="image/png", data=PNG, filename="s.png")])
    assert data == {
        "type": "binary",
        "mimeType": "image/png",
        "data": base64.b64encode(PNG).decode(),
        "filename": "s.png",
    }


def test_content_to_data_of_several_items_is_a_list():
    data = content_to_data([TextContent(text="a"), JsonContent(value=1)])
    assert data == [{"type": "text", "text": "a"}, {"type": "json", "value": 1}]


def test_request_to_dict_is_camel_case_and_round_trips():
    request = ClientToolRequest(
        request_id="r1",
        thread_id="t1",
        call_id="c1",
        tool_name="OpenFile",
        arguments={"path": "a.py"},
        description="Open a file in the editor",
        mode="read",
    )
    data = request.to_dict()
    assert data["requestId"] == "r1" and data["toolName"] == "OpenFile" and data["threadId"] == "t1"
    assert ClientToolRequest.from_dict(data) == request


def test_request_from_dict_refuses_missing_fields():
    data = {"requestId": "r1", "threadId": "t1", "toolName": "t", "arguments": {}, "description": "", "mode": "read"}
    with pytest.raises(EnvelopeError, match="'callId' must be a str"):
        ClientToolRequest.from_dict(data)
