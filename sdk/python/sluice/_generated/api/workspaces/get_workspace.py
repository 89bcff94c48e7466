from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.wait_for import WaitFor
from ...models.workspace_details import WorkspaceDetails
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    workspace_id: str,
    *,
    owner_user_id: str | Unset = UNSET,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["ownerUserId"] = owner_user_id

    json_wait_for: str | Unset = UNSET
    if not isinstance(wait_for, Unset):
        json_wait_for = wait_for.value

    params["waitFor"] = json_wait_for

    params["timeoutMs"] = timeout_ms


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/workspaces/{workspace_id}".format(workspace_id=quote(str(workspace_id), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | WorkspaceDetails | None:
    if response.status_code == 200:
        response_200 = WorkspaceDetails.from_dict(response.json())



        return response_200

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())



        return response_404

    if response.status_code == 500:
        response_500 = ErrorBody.from_dict(response.json())



        return response_500

    if response.status_code == 503:
        response_503 = ErrorBody.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | WorkspaceDetails]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,

) -> Response[ErrorBody | WorkspaceDetails]:
    """ One workspace with its spec (owner-scoped; uniform 404).

    Args:
        workspace_id (str):
        owner_user_id (str | Unset): The user the workspace belongs to.
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | WorkspaceDetails]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
owner_user_id=owner_user_id,
wait_for=wait_for,
timeout_ms=timeout_ms,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,

) -> ErrorBody | WorkspaceDetails | None:
    """ One workspace with its spec (owner-scoped; uniform 404).

    Args:
        workspace_id (str):
        owner_user_id (str | Unset): The user the workspace belongs to.
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | WorkspaceDetails
     """


    return sync_detailed(
        workspace_id=workspace_id,
client=client,
owner_user_id=owner_user_id,
wait_for=wait_for,
timeout_ms=timeout_ms,

    ).parsed

async def asyncio_detailed(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,

) -> Response[ErrorBody | WorkspaceDetails]:
    """ One workspace with its spec (owner-scoped; uniform 404).

    Args:
        workspace_id (str):
        owner_user_id (str | Unset): The user the workspace belongs to.
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | WorkspaceDetails]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
owner_user_id=owner_user_id,
wait_for=wait_for,
timeout_ms=timeout_ms,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,

) -> ErrorBody | WorkspaceDetails | None:
    """ One workspace with its spec (owner-scoped; uniform 404).

    Args:
        workspace_id (str):
        owner_user_id (str | Unset): The user the workspace belongs to.
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | WorkspaceDetails
     """


    return (await asyncio_detailed(
        workspace_id=workspace_id,
client=client,
owner_user_id=owner_user_id,
wait_for=wait_for,
timeout_ms=timeout_ms,

    )).parsed
