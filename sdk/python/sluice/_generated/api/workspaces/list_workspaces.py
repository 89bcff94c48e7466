from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.list_workspaces_response import ListWorkspacesResponse
from ...models.workspace_status import WorkspaceStatus
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    owner_user_id: str | Unset = UNSET,
    status: WorkspaceStatus | Unset = UNSET,
    limit: str | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["ownerUserId"] = owner_user_id

    json_status: str | Unset = UNSET
    if not isinstance(status, Unset):
        json_status = status.value

    params["status"] = json_status

    params["limit"] = limit

    params["idempotencyKey"] = idempotency_key


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/workspaces",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | ListWorkspacesResponse | None:
    if response.status_code == 200:
        response_200 = ListWorkspacesResponse.from_dict(response.json())



        return response_200

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | ListWorkspacesResponse]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,
    status: WorkspaceStatus | Unset = UNSET,
    limit: str | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,

) -> Response[ErrorBody | ListWorkspacesResponse]:
    """ The owner's workspaces, newest first.

    Args:
        owner_user_id (str | Unset): The user the workspace belongs to.
        status (WorkspaceStatus | Unset):
        limit (str | Unset):
        idempotency_key (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | ListWorkspacesResponse]
     """


    kwargs = _get_kwargs(
        owner_user_id=owner_user_id,
status=status,
limit=limit,
idempotency_key=idempotency_key,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,
    status: WorkspaceStatus | Unset = UNSET,
    limit: str | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,

) -> ErrorBody | ListWorkspacesResponse | None:
    """ The owner's workspaces, newest first.

    Args:
        owner_user_id (str | Unset): The user the workspace belongs to.
        status (WorkspaceStatus | Unset):
        limit (str | Unset):
        idempotency_key (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | ListWorkspacesResponse
     """


    return sync_detailed(
        client=client,
owner_user_id=owner_user_id,
status=status,
limit=limit,
idempotency_key=idempotency_key,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,
    status: WorkspaceStatus | Unset = UNSET,
    limit: str | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,

) -> Response[ErrorBody | ListWorkspacesResponse]:
    """ The owner's workspaces, newest first.

    Args:
        owner_user_id (str | Unset): The user the workspace belongs to.
        status (WorkspaceStatus | Unset):
        limit (str | Unset):
        idempotency_key (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | ListWorkspacesResponse]
     """


    kwargs = _get_kwargs(
        owner_user_id=owner_user_id,
status=status,
limit=limit,
idempotency_key=idempotency_key,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,
    status: WorkspaceStatus | Unset = UNSET,
    limit: str | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,

) -> ErrorBody | ListWorkspacesResponse | None:
    """ The owner's workspaces, newest first.

    Args:
        owner_user_id (str | Unset): The user the workspace belongs to.
        status (WorkspaceStatus | Unset):
        limit (str | Unset):
        idempotency_key (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | ListWorkspacesResponse
     """


    return (await asyncio_detailed(
        client=client,
owner_user_id=owner_user_id,
status=status,
limit=limit,
idempotency_key=idempotency_key,

    )).parsed
