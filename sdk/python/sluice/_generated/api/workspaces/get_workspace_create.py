from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.workspace_create_state import WorkspaceCreateState
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    idempotency_key: str,
    *,
    owner_user_id: str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["ownerUserId"] = owner_user_id


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/workspaces/idempotency-keys/{idempotency_key}".format(idempotency_key=quote(str(idempotency_key), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | WorkspaceCreateState | None:
    if response.status_code == 200:
        response_200 = WorkspaceCreateState.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | WorkspaceCreateState]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    idempotency_key: str,
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,

) -> Response[ErrorBody | WorkspaceCreateState]:
    """ What became of an idempotent create, by its key.

    Args:
        idempotency_key (str):
        owner_user_id (str | Unset): The user the workspace belongs to.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | WorkspaceCreateState]
     """


    kwargs = _get_kwargs(
        idempotency_key=idempotency_key,
owner_user_id=owner_user_id,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    idempotency_key: str,
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,

) -> ErrorBody | WorkspaceCreateState | None:
    """ What became of an idempotent create, by its key.

    Args:
        idempotency_key (str):
        owner_user_id (str | Unset): The user the workspace belongs to.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | WorkspaceCreateState
     """


    return sync_detailed(
        idempotency_key=idempotency_key,
client=client,
owner_user_id=owner_user_id,

    ).parsed

async def asyncio_detailed(
    idempotency_key: str,
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,

) -> Response[ErrorBody | WorkspaceCreateState]:
    """ What became of an idempotent create, by its key.

    Args:
        idempotency_key (str):
        owner_user_id (str | Unset): The user the workspace belongs to.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | WorkspaceCreateState]
     """


    kwargs = _get_kwargs(
        idempotency_key=idempotency_key,
owner_user_id=owner_user_id,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    idempotency_key: str,
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,

) -> ErrorBody | WorkspaceCreateState | None:
    """ What became of an idempotent create, by its key.

    Args:
        idempotency_key (str):
        owner_user_id (str | Unset): The user the workspace belongs to.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | WorkspaceCreateState
     """


    return (await asyncio_detailed(
        idempotency_key=idempotency_key,
client=client,
owner_user_id=owner_user_id,

    )).parsed
